"""Benchmark evaluation: HumanEval tasks, scoring in the sandbox, unbiased pass@k.

Plain Python (no Dagster): ``codegen/assets/evaluation.py`` and
``codegen/orchestration/cli/evaluate.py``
adapt these modules.
"""
