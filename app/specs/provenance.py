"""How each spec's words are sourced: the sources it cites, counted by kind (`model.Source.kind`).

A spec cites sources for its bands, pose, size, file rules, expression and edit policies. Counted
per spec, each distinct source once, by kind: "primary" (the authority's own page or document),
"copy" (its text hosted by someone else), "secondary" (someone's account of it) and "none" (a rule
of ours: no words of the authority found). An edit operation that rests on no source at all (the
authority is silent and no general words of its were found, or no authority stands behind the spec)
counts under "none" too: there, as well, no words were found. Pure: specs in, numbers and text out.
"""

from __future__ import annotations

from collections.abc import Iterable

from .model import PhotoSpec
from .rules import SOURCE_KINDS, Source


def cited_sources(spec: PhotoSpec) -> list[Source]:
    """Every distinct source the spec cites: its rules' (`PhotoSpec.sources`) and its edit policies'."""
    found = list(spec.sources())
    for policy in spec.edits.values():
        if policy.source is not None and policy.source not in found:
            found.append(policy.source)
    return found


def kind_counts(spec: PhotoSpec) -> dict[str, int]:
    """{kind: count} over SOURCE_KINDS: the spec's distinct sources by kind, plus, under "none",
    its edit operations that rest on no source."""
    counts = {kind: 0 for kind in SOURCE_KINDS}
    for source in cited_sources(spec):
        counts[source.kind] += 1
    counts["none"] += sum(1 for policy in spec.edits.values() if policy.source is None)
    return counts


def sources_table(specs: Iterable[PhotoSpec]) -> str:
    """A plain-text table: one row per spec with its counts by kind, then their totals (a source
    that several specs cite counts once per spec)."""
    rows = [(spec.id, kind_counts(spec)) for spec in specs]
    totals = {kind: sum(counts[kind] for _, counts in rows) for kind in SOURCE_KINDS}
    width = max([len("spec"), len("total")] + [len(spec_id) for spec_id, _ in rows])
    header = f"{'spec':<{width}}  " + "  ".join(f"{kind:>9}" for kind in SOURCE_KINDS)
    lines = [header, "-" * len(header)]
    for spec_id, counts in [*rows, ("total", totals)]:
        if spec_id == "total":
            lines.append("-" * len(header))
        lines.append(f"{spec_id:<{width}}  " + "  ".join(f"{counts[kind]:>9}" for kind in SOURCE_KINDS))
    return "\n".join(lines)
