"""Benchmarks. `python -m bench.suite` measures everything and writes docs/BENCHMARKS.md (see its
docstring); `bench.gpu` does the same on an NVIDIA GPU. The single-purpose modules (`bench.lanes`,
`bench.load`, `bench.slowloris`, `bench.idphoto`, `bench.int8`) print what they measure. What the
tests share with the benchmarks (harness, photos, corpus, inspector, clients) is in tests/support/;
bench/ imports it, and nothing imports bench/."""
