"""Benchmarks: each module prints what it measured (see README)."""
