"""Stage timings of one request or one pipeline run."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field


@dataclass
class Timings:
    """Stage durations of one request in seconds, reported in JSON and in `Server-Timing`."""

    stages: dict[str, float] = field(default_factory=dict)
    models: dict[str, str] = field(default_factory=dict)  # stage -> the model it ran (inference metrics)
    notes: dict[str, str] = field(default_factory=dict)  # e.g. lane -> wide: said in Server-Timing as desc

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        started = time.perf_counter()
        try:
            yield
        finally:
            self.stages[name] = self.stages.get(name, 0.0) + time.perf_counter() - started

    def header(self) -> str:
        stages = [f"{name};dur={seconds * 1000:.1f}" for name, seconds in self.stages.items()]
        return ", ".join(stages + [f'{name};desc="{value}"' for name, value in self.notes.items()])

    def as_dict(self) -> dict[str, float]:
        return {name: round(seconds, 4) for name, seconds in self.stages.items()}
