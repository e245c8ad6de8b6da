"""Benchmarks, run as modules: `python -m bench.NAME [--quick]` from the repository root.

`bench` is a package so that no script in it is ever importable under its own
bare name: run as `python bench/NAME.py`, this folder would come first on
`sys.path` and a script called like a library (`telegram.py`) would shadow it
for every script. `python -m bench` runs them all (see `bench/__main__.py`);
tests/test_bench_names.py keeps the names clear of importable modules and
checks every script has a `--quick` mode.
"""
