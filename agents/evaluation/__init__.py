"""Benchmark evaluation: HumanEval tasks, scoring in the sandbox, unbiased pass@k.

Plain Python (no Dagster): ``assets/evaluation.py`` and ``orchestration/cli/evaluate.py``
adapt these modules.
"""
