"""Regenerate the committed locks of the named package sets: ``make sandbox-locks``.

``python -m codegen.sandbox.image.relock [SET ...]`` (default: every named set) resolves
``NAMED_SETS[SET]`` for the sandbox's Python against PyPI (pip's ``--isolated``: no mirror or
constraint of this machine) and writes ``locks/<SET>.txt`` beside this module. Needs the
package index; run it after changing a pin in ``packages.py`` and commit the result: the lock
names every transitive pin, so the diff shows what moved, and the image tags change with it.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from codegen.sandbox.errors import SandboxError
from codegen.sandbox.image.lock import LOCK_MACHINE, lock_resource
from codegen.sandbox.image.packages import NAMED_SETS, SANDBOX_PYTHON
from codegen.sandbox.image.wheelhouse import resolve_lock

LOCK_DIR = Path(__file__).resolve().parent / "locks"


def header(set_name: str) -> str:
    return (
        f"The {set_name!r} sandbox package set, locked whole: every distribution its python3\n"
        "gets from the set, transitive ones included, with the sha256 of its wheel for CPython\n"
        f"{SANDBOX_PYTHON} on manylinux {LOCK_MACHINE}. Resolved from "
        f'NAMED_SETS["{set_name}"] (packages.py) against PyPI\n'
        "by `make sandbox-locks`; do not edit. The build installs it with\n"
        "pip install --require-hashes --no-deps."
    )


def relock(set_name: str) -> Path:
    lock = resolve_lock(NAMED_SETS[set_name], isolated=True)
    path = LOCK_DIR / f"{set_name}.txt"
    path.write_text(lock.text(header(set_name)), encoding="utf-8")
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sets", nargs="*", metavar="SET", help=f"of {sorted(NAMED_SETS)}")
    args = parser.parse_args(argv)
    unknown = [s for s in args.sets if s not in NAMED_SETS]
    if unknown:
        choose = f"choose of {sorted(NAMED_SETS)}"
        print(f"relock: unknown set {unknown[0]!r}; {choose}", file=sys.stderr)
        return 2
    for set_name in args.sets or sorted(NAMED_SETS):
        try:
            relock(set_name)
        except SandboxError as exc:
            print(f"relock: {set_name}: {exc}", file=sys.stderr)
            return 1
        print(f"wrote {lock_resource(set_name)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
