"""Command line for the spec table: `python -m app.specs --sources`.

`--sources` writes, per spec, how many of the sources it cites are primary (the authority's own
page or document), copies (its text hosted by someone else), secondary (someone's account of it)
or none (a rule of ours, or an edit on which no words were found), and the totals
(`app.specs.provenance`).
"""

from __future__ import annotations

import argparse
import sys

from . import SPECS
from .provenance import sources_table


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m app.specs", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sources", action="store_true", help="count each spec's sources by kind")
    args = parser.parse_args(argv)
    if not args.sources:
        parser.print_usage(sys.stderr)
        return 2
    sys.stdout.write(sources_table(SPECS.values()) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
