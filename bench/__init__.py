"""Benchmarks. `python -m bench.suite` measures everything and writes docs/BENCHMARKS.md (see its
docstring); `bench.gpu` does the same on an NVIDIA GPU. The older single-purpose modules
(`bench.serve`, `bench.load`, `bench.idphoto`) print what they measure."""
