"""The unbiased pass@k estimator against brute-force enumeration of every k-subset."""

from __future__ import annotations

import itertools
import math

import pytest

from codegen.evaluation.passk import mean_pass_at_k, pass_at_k, reportable_ks


def brute_force(n: int, c: int, k: int) -> float:
    """Fraction of all k-subsets of n samples (c correct) that hold a correct one."""
    samples = [True] * c + [False] * (n - c)
    subsets = list(itertools.combinations(range(n), k))
    return sum(any(samples[i] for i in s) for s in subsets) / len(subsets)


@pytest.mark.parametrize("n", range(1, 13))
def test_matches_enumeration_for_every_c_and_k(n: int) -> None:
    for c in range(n + 1):
        for k in range(1, n + 1):
            assert pass_at_k(n, c, k) == pytest.approx(brute_force(n, c, k), abs=1e-12)


def test_closed_form_and_edges() -> None:
    assert pass_at_k(200, 37, 1) == pytest.approx(37 / 200)
    assert pass_at_k(200, 37, 10) == pytest.approx(1 - math.comb(163, 10) / math.comb(200, 10))
    assert pass_at_k(10, 0, 10) == 0.0
    assert pass_at_k(10, 1, 10) == 1.0
    # Numerically stable where the binomials themselves overflow a float.
    assert 0.0 < pass_at_k(2000, 1, 100) < 1.0
    assert pass_at_k(2000, 1, 100) == pytest.approx(100 / 2000)


@pytest.mark.parametrize(("n", "c", "k"), [(5, 6, 1), (5, -1, 1), (5, 1, 0), (5, 1, 6), (0, 0, 1)])
def test_rejects_impossible_inputs(n: int, c: int, k: int) -> None:
    with pytest.raises(ValueError):
        pass_at_k(n, c, k)


def test_mean_and_reportable_ks() -> None:
    assert mean_pass_at_k([(1, 1), (1, 0), (1, 0), (1, 1)], 1) == 0.5
    assert reportable_ks([1, 1]) == [1]
    assert reportable_ks([10, 20]) == [1, 10]
    assert reportable_ks([10, 9]) == [1]
    with pytest.raises(ValueError):
        mean_pass_at_k([], 1)
