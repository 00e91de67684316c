"""Benchmark harness: the ensemble design against its alternatives, on one machine.

Run it with ``make bench`` (or ``.venv/bin/python -m bench.run --help``). It starts its own
embedded Triton (response cache off) and gunicorn servers on free ports, drives four modes
at several concurrencies with the test images, and writes JSON and Markdown to
``bench/results/``. See ``bench/README.md`` for what is measured and how.
"""
