"""What the benchmarks' JSON says about the machine a run was measured on."""

from __future__ import annotations

import os


def machine() -> str:
    """The core count and CPU model, e.g. ``2 cores, AMD EPYC 7B13``."""
    model = "unknown CPU"
    with open("/proc/cpuinfo") as info:
        for line in info:
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    return f"{os.cpu_count()} cores, {model}"
