"""The 30 ClassEval tasks held out from every selection rule's tuning.

Drawn before any task was read: ``random.Random(37).sample`` over the 100 ids
``ClassEval_0`` ... ``ClassEval_99`` in numeric order, 30 of them. The ids come from the seed
alone, never from looking at tasks. Nobody tuning a selection rule on ClassEval reads these
tasks; every selection figure on ClassEval is reported on them first (beside the best single
file and the oracle on the same 30), then on all 100.

    .venv/bin/python -m benchmarks.common.classeval_heldout   # prints the 30 ids
"""

from __future__ import annotations

import random

SEED = 37
HELD_OUT_COUNT = 30
TASK_COUNT = 100


def classeval_ids() -> list[str]:
    """ClassEval's task ids in numeric order."""
    return [f"ClassEval_{i}" for i in range(TASK_COUNT)]


def held_out_ids() -> list[str]:
    """The 30 held-out ids, in numeric order."""
    drawn = random.Random(SEED).sample(classeval_ids(), HELD_OUT_COUNT)
    return sorted(drawn, key=lambda task: int(task.rsplit("_", 1)[1]))


HELD_OUT = frozenset(held_out_ids())


if __name__ == "__main__":
    print(" ".join(held_out_ids()))
