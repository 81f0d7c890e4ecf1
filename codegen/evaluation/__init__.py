"""Benchmark evaluation: task sets, scoring in the sandbox, unbiased pass@k, reports.

Plain Python (no Dagster). ``session.py`` is the one evaluation session that the CLI
(``codegen/orchestration/cli/evaluate.py``), the assets (``codegen/assets/evaluation_family.py``)
and a backfill's end all drive; ``benchmarks.py`` registers the benchmarks with asset
families of their own.
"""
