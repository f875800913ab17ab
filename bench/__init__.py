"""Benchmarks. `python -m bench.suite` measures everything and writes docs/BENCHMARKS.md (see its
docstring); `bench.gpu` does the same on an NVIDIA GPU; `bench.browser` measures the page's
on-device cut-out in Chromium and adds it. The older single-purpose modules
(`bench.serve`, `bench.load`, `bench.idphoto`) print what they measure."""
