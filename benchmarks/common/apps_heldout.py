"""The 40 APPS tasks held out from every selection rule's tuning.

Drawn before any pick among programs was run: ``random.Random(47).sample`` over the 128 ids of
MapCoder's APPS selection (``datasets/apps/apps-128.jsonl``) in numeric order, 40 of them. The
ids come from the seed and the set's ids alone, never from looking at tasks or picks; the draw
is written out below so that it stays fixed (and checks itself against the task file when
run). Nobody tuning a selection rule on APPS reads these tasks; every selection figure on APPS
is reported on them first (beside the best single run and the oracle on the same 40), then on
all 128.

    .venv/bin/python -m benchmarks.common.apps_heldout [--tasks FILE]   # redraws, prints the 40
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

from benchmarks.common.paths import SHARED

SEED = 47
HELD_OUT_COUNT = 40
APPS_SET = SHARED / "datasets" / "apps" / "apps-128.jsonl"

# The draw's result, as ``held_out_ids`` gives it on the 128 ids.
HELD_OUT = frozenset(
    [
        "1604",
        "1607",
        "1616",
        "1617",
        "1618",
        "1626",
        "1634",
        "1665",
        "1666",
        "2000",
        "2009",
        "2056",
        "2064",
        "2066",
        "2073",
        "2087",
        "2092",
        "2098",
        "2104",
        "2126",
        "2130",
        "2144",
        "2159",
        "2170",
        "2174",
        "2187",
        "2189",
        "2190",
        "2192",
        "2198",
        "2233",
        "2886",
        "3242",
        "3387",
        "3439",
        "3531",
        "3569",
        "3698",
        "4268",
        "4391",
    ]
)


def apps_ids(task_file: Path) -> list[str]:
    """The set's task ids in numeric order."""
    lines = task_file.read_text(encoding="utf-8").splitlines()
    return sorted({str(json.loads(line)["id"]) for line in lines if line.strip()}, key=int)


def held_out_ids(ids: list[str]) -> list[str]:
    """The seeded draw of 40 among ``ids``, in numeric order."""
    drawn = random.Random(SEED).sample(sorted(ids, key=int), HELD_OUT_COUNT)
    return sorted(drawn, key=int)


def main() -> int:
    parser = argparse.ArgumentParser(description="Redraw APPS's held-out tasks and print them.")
    parser.add_argument("--tasks", type=Path, default=APPS_SET)
    drawn = held_out_ids(apps_ids(parser.parse_args().tasks))
    print(" ".join(drawn))
    if set(drawn) != HELD_OUT:
        print("the draw differs from HELD_OUT: not the 128-task set?", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
