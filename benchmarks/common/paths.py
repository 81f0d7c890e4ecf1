"""Where the benchmarks find the checkout and the shared data beside it."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]  # the repository root
SHARED = ROOT.parent / "shared"  # recorded replies and data sets, outside the checkout
RESULTS = ROOT / "benchmarks" / "results"  # the stored JSON docs/results.md is made from
