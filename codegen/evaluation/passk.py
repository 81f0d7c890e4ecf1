"""The unbiased pass@k estimator of Chen et al. (2021), "Evaluating Large Language Models
Trained on Code", section 2.1.

For one task with ``n`` samples of which ``c`` are correct,

    pass@k = 1 - C(n - c, k) / C(n, k)

computed in the numerically stable product form
``1 - prod_{i = n - c + 1}^{n} (1 - k / i)``, which never forms the huge binomials.
The benchmark figure is the mean over tasks.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np


def pass_at_k(n: int, c: int, k: int) -> float:
    """Probability that at least one of ``k`` samples drawn from ``n`` (``c`` correct) passes."""
    if not (0 <= c <= n) or k < 1 or n < 1:
        raise ValueError(f"need 0 <= c <= n, n >= 1 and k >= 1; got n={n}, c={c}, k={k}")
    if k > n:
        raise ValueError(f"pass@{k} needs at least {k} samples per task; got n={n}")
    if n - c < k:  # every draw of k must contain a correct sample
        return 1.0
    return float(1.0 - np.prod(1.0 - k / np.arange(n - c + 1, n + 1)))


def mean_pass_at_k(counts: Iterable[tuple[int, int]], k: int) -> float:
    """Mean pass@k over tasks given ``(n, c)`` per task."""
    values = [pass_at_k(n, c, k) for n, c in counts]
    if not values:
        raise ValueError("no tasks to average over")
    return float(np.mean(values))


def reportable_ks(samples_per_task: Sequence[int], wanted: Sequence[int] = (1, 10)) -> list[int]:
    """The k's that every task has enough samples for (pass@10 only when n >= 10 everywhere)."""
    if not samples_per_task:
        return []
    least = min(samples_per_task)
    return [k for k in wanted if k <= least]
