"""Benchmarks of Forge against its peers; `python bench/run_all.py` (or `make bench`) runs them.

Not part of the test suite's pass/fail: `tests/bench` only checks that every section runs.
"""
