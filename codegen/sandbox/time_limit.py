"""Verdicts decided by a time limit: the machine's load when they were reached, and one way
to say so.

A run killed at its time limit may have been slow only because the machine was busy
(ClassEval's references _28 and _35 pass alone and time out at load 7-10 under the authors'
5 s), so such a verdict carries the host's 1-minute load average, and every report that
counts verdicts says how many the time limit decided and at what load.
"""

from __future__ import annotations

import os
from collections.abc import Iterable


def load_1m() -> float | None:
    """The host's 1-minute load average now (None where the platform keeps none)."""
    try:
        return round(os.getloadavg()[0], 2)
    except OSError:
        return None


def decided_by(limits_s: Iterable[float | None], loads: Iterable[float | None]) -> str:
    """``by the 5 s time limit at load 6.2``: the limits and the range of loads of a set of
    time-limit verdicts (a load not recorded, from a score stored before loads were, is
    left out; none recorded says so)."""
    limits = sorted({limit for limit in limits_s if limit is not None})
    shown = ", ".join(f"{limit:g} s" for limit in limits)
    text = f"by the {shown} time limit" if limits else "by the time limit"
    recorded = sorted(load for load in loads if load is not None)
    if not recorded:
        return f"{text} (load not recorded)"
    low, high = f"{recorded[0]:.1f}", f"{recorded[-1]:.1f}"
    return f"{text} at load {low if low == high else f'{low}-{high}'}"
