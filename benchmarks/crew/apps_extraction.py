"""The crew's program extraction on real replies to APPS tasks (no execution).

    .venv/bin/python -m benchmarks.crew.apps_extraction [--data DIR] [--out FILE]

For every row of MapCoder's six APPS runs (``../shared/replays/mapcoder-apps/``), the final
raw reply (``responses[-1]``) goes through the reader the crew uses for a spec with a program
(``codegen.agents.replies.extract_program``, no spec functions: the replies are whole stdin/
stdout programs), and the code it gives is compared with the program MapCoder's harness
extracted from the same reply (``source_codes[-1]``): equal when their ``ast.dump`` is (code
that does not parse: when its whitespace-normalised text is), or equal but for the imports
the reader adds (``typing`` names, ``module.attr`` modules used but never imported).

Prints one JSON object (and writes it with ``--out``): per file, ``matches`` / ``total``,
``matches_after_added_imports``, and each mismatch's task id and cause: ``refused`` (the
reader raised; its message, and what the harness's code is: one that does not parse, or only
definitions, which print nothing when run) or ``different`` (what the two codes define and how
long they are).
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
from pathlib import Path
from typing import Any

from benchmarks.common import SHARED, machine
from codegen.agents.replies import AgentOutputError, extract_program

DATA = SHARED / "replays" / "mapcoder-apps"
COMMAND = ".venv/bin/python -m benchmarks.crew.apps_extraction"


def _shape(code: str) -> str:
    try:
        return ast.dump(ast.parse(code))
    except (SyntaxError, ValueError):
        return " ".join(code.split())


def _without_imports(code: str) -> str:
    """``code``'s shape without its top-level imports (to tell added imports apart)."""
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return _shape(code)
    tree.body = [n for n in tree.body if not isinstance(n, ast.Import | ast.ImportFrom)]
    return ast.dump(tree)


def _defines(code: str) -> list[str]:
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return ["(does not parse)"]
    return [n.name for n in tree.body if isinstance(n, ast.FunctionDef | ast.ClassDef)]


def _what_it_is(code: str) -> str:
    """What the harness's code is, for a reply the reader refused."""
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return "does not parse either"
    definitions = (
        ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Import | ast.ImportFrom
    )
    if all(isinstance(n, definitions) for n in tree.body):
        return "only definitions: run as a program, it prints nothing"
    return "a program"


def compare_file(path: Path) -> dict[str, Any]:
    """One run's rows: matches and each mismatch with its cause."""
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    matches = after_imports = 0
    mismatches: list[dict[str, Any]] = []
    for row in rows:
        reply, theirs = row["responses"][-1], row["source_codes"][-1]
        try:
            ours = extract_program(reply, []).code
        except AgentOutputError as exc:
            mismatches.append(
                {
                    "task_id": row["task_id"],
                    "cause": "refused",
                    "reason": str(exc),
                    "theirs": _what_it_is(theirs),
                }
            )
            continue
        if _shape(ours) == _shape(theirs):
            matches += 1
        elif _without_imports(ours) == _without_imports(theirs):
            after_imports += 1
        else:
            mismatches.append(
                {
                    "task_id": row["task_id"],
                    "cause": "different",
                    "ours_defines": _defines(ours),
                    "theirs_defines": _defines(theirs),
                    "ours_lines": len(ours.splitlines()),
                    "theirs_lines": len(theirs.strip().splitlines()),
                }
            )
    return {
        "total": len(rows),
        "matches": matches,
        "matches_after_added_imports": after_imports,
        "mismatches": mismatches,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    files = sorted(args.data.glob("*.jsonl"))
    if not files:
        print(f"apps_extraction: no *.jsonl files in {args.data}", file=sys.stderr)
        return 2
    runs = {f.stem: compare_file(f) for f in files}
    result = {
        "benchmark": "apps_extraction",
        "command": COMMAND,
        "machine": machine(),
        "rows": sum(r["total"] for r in runs.values()),
        "matches": sum(r["matches"] for r in runs.values()),
        "matches_after_added_imports": sum(r["matches_after_added_imports"] for r in runs.values()),
        "runs": runs,
    }
    text = json.dumps(result, indent=2)
    if args.out:
        args.out.write_text(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
