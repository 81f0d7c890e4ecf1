"""Writes docs/results.md from the benchmark JSON stored under benchmarks/results/.

Every figure on that page is read from one of those files, printed as the file holds it
(never rounded here), beside the baseline the same run measured, the command that wrote the
file and the machine it ran on. The descriptions (``benchmarks.results_descriptions``) are the
only hand-written part; a stored file without one, or a description whose key is missing from
its file, is an error, so the page cannot drift from the JSON. A recorded command is history
and is shown as recorded; where it names a script that has since moved (``MOVED``), the page
also shows the command that runs the same today. Benchmarks without stored JSON are listed as
not re-measured, pointing to CHANGELOG.md, where their figures are kept as recorded; the
modules they import (no ``__main__``) are not listed.

    .venv/bin/python -m benchmarks.results_page          # rewrites docs/results.md
    .venv/bin/python -m benchmarks.results_page --check  # exit 1 when the page is stale
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from typing import Any

from benchmarks.common import RESULTS, ROOT
from benchmarks.results_descriptions import DESCRIPTIONS, Description

PAGE = ROOT / "docs" / "results.md"
COMMAND = ".venv/bin/python -m benchmarks.results_page"
# Issue 47 grouped the flat scripts into packages: each old script path, as recorded commands
# (the JSON here, CHANGELOG.md) name it, and the module that runs the same today.
MOVED = {
    "benchmarks/classeval_heldout.py": "benchmarks.common.classeval_heldout",
    "benchmarks/classeval_replay_crew.py": "benchmarks.crew.classeval_replay_crew",
    "benchmarks/classeval_scoring.py": "benchmarks.scoring.classeval_scoring",
    "benchmarks/codet_samples.py": "benchmarks.scoring.codet_samples",
    "benchmarks/corpus_build.py": "benchmarks.corpus.corpus_build",
    "benchmarks/cpu_default_build.py": "benchmarks.corpus.cpu_default_build",
    "benchmarks/crew_overhead.py": "benchmarks.crew.crew_overhead",
    "benchmarks/deploy_load.py": "benchmarks.deploy.deploy_load",
    "benchmarks/embedder_ceiling.py": "benchmarks.retrieval.embedder_ceiling",
    "benchmarks/embedder_variants.py": "benchmarks.retrieval.embedder_variants",
    "benchmarks/first_index_build.py": "benchmarks.corpus.first_index_build",
    "benchmarks/github_rate_limit.py": "benchmarks.corpus.github_rate_limit",
    "benchmarks/gpu_corpus_build.py": "benchmarks.corpus.gpu_corpus_build",
    "benchmarks/humaneval_canonical.py": "benchmarks.scoring.humaneval_canonical",
    "benchmarks/humaneval_scripted_crew.py": "benchmarks.crew.humaneval_scripted_crew",
    "benchmarks/humanevalplus_agreement.py": "benchmarks.scoring.humanevalplus_agreement",
    "benchmarks/humanevalplus_speed.py": "benchmarks.scoring.humanevalplus_speed",
    "benchmarks/hybrid_paths.py": "benchmarks.retrieval.hybrid_paths",
    "benchmarks/index_build_time.py": "benchmarks.retrieval.index_build_time",
    "benchmarks/index_scale.py": "benchmarks.retrieval.index_scale",
    "benchmarks/isolation_cost.py": "benchmarks.scoring.isolation_cost",
    "benchmarks/learned_pick.py": "benchmarks.pick.learned_pick",
    "benchmarks/mbpp_published.py": "benchmarks.scoring.mbpp_published",
    "benchmarks/near_dedupe.py": "benchmarks.corpus.near_dedupe",
    "benchmarks/prompt_examples.py": "benchmarks.crew.prompt_examples",
    "benchmarks/published_tables.py": "benchmarks.scoring.published_tables",
    "benchmarks/real_replies.py": "benchmarks.crew.real_replies",
    "benchmarks/replay_candidates.py": "benchmarks.pick.replay_candidates",
    "benchmarks/replay_crew.py": "benchmarks.crew.replay_crew",
    "benchmarks/retrieval_quality.py": "benchmarks.retrieval.retrieval_quality",
    "benchmarks/sandbox_humaneval.py": "benchmarks.scoring.sandbox_humaneval",
    "benchmarks/selection.py": "benchmarks.pick.selection",
    "benchmarks/task_set_backfill.py": "benchmarks.crew.task_set_backfill",
}
SCRIPT = re.compile(r"python (benchmarks/\w+\.py)")


class StaleError(Exception):
    """The JSON and the descriptions do not fit together."""


def lookup(data: dict[str, Any], key: str, source: str) -> object:
    # Keys may hold dots only as separators; embedder names use '>' and '-', never '.'.
    node: object = data
    for part in key.split("."):
        if not isinstance(node, dict) or part not in node:
            raise StaleError(f"{source}: no key {key!r}")
        node = node[part]
    return node


def show(value: object) -> str:
    """The value as the JSON holds it: json.dumps keeps every digit a float was stored with."""
    if isinstance(value, list):
        return ", ".join(show(v) for v in value)
    if isinstance(value, str):
        return value
    return json.dumps(value)


def table(stem: str, desc: Description, data: dict[str, Any]) -> list[str]:
    source = f"benchmarks/results/{stem}.json"
    for field in ("command", "machine"):
        if not isinstance(data.get(field), str):
            raise StaleError(f"{source}: no {field!r} string")
    lines = [
        f"## {desc.title}",
        "",
        desc.what,
        "",
        "| figure | value | baseline in the same run |",
        "|---|---|---|",
    ]
    for row in desc.rows:
        baseline = ""
        if row.baseline_key:
            value = show(lookup(data, row.baseline_key, source))
            baseline = f"{row.baseline_label}: {value}"
        lines.append(f"| {row.label} | {show(lookup(data, row.key, source))} | {baseline} |")
    recorded = data["command"]
    lines += ["", f"- Command, as recorded: `{recorded}`"]
    rerun = runs_today(recorded, desc.module, source)
    if rerun != recorded:
        lines.append(f"- Runs today as: `{rerun}`")
    lines += [
        f"- Machine: {data['machine']}",
        f"- Module: `{desc.module}`; data: `{source}`",
        "",
    ]
    return lines


def runs_today(command: str, module: str, source: str) -> str:
    """``command`` with each script path it names that has since moved replaced by the module
    that runs the same today (``MOVED``); a path ``MOVED`` does not map to the description's
    module is an error."""
    for script in SCRIPT.findall(command):
        if MOVED.get(script) != module:
            raise StaleError(f"{source}: its command runs {script}, not {module} (see MOVED)")
    return SCRIPT.sub(lambda m: f"python -m {MOVED[m.group(1)]}", command)


def benchmark_modules() -> list[str]:
    """Every runnable benchmark module today (a ``__main__`` guard, or a package's
    ``__main__.py``), as ``python -m`` names it; ``common`` holds only what they share."""
    names = []
    for path in sorted((ROOT / "benchmarks").glob("*/**/*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        if parts[1] == "common" or path.name == "__init__.py":
            continue
        if path.name == "__main__.py":
            names.append(".".join(parts[:-1]))
        elif 'if __name__ == "__main__"' in path.read_text():
            names.append(".".join(parts))
    return names


def render() -> str:
    stems = sorted(p.stem for p in RESULTS.glob("*.json"))
    unknown = sorted(set(stems) - set(DESCRIPTIONS))
    if unknown:
        raise StaleError(
            f"no description in benchmarks/results_descriptions.py for {', '.join(unknown)}"
        )
    modules = benchmark_modules()
    lines = [
        "# Results",
        "",
        "<!-- Generated by benchmarks/results_page.py from benchmarks/results/*.json;"
        " do not edit. -->",
        "",
        "Current figures, each read from the JSON a benchmark wrote, with the baseline"
        " measured in the same run, the command and the machine. A command is shown as it was"
        " recorded; where the script it ran has since moved, the command that runs the same"
        f" today is beside it. Regenerate this page with `{COMMAND}`;"
        " `tests/test_results_page.py` fails when it and the stored JSON disagree. How the"
        " figures are scored: [methods.md](methods.md).",
        "",
    ]
    for stem in stems:
        desc = DESCRIPTIONS[stem]
        if desc.module not in modules:
            raise StaleError(f"{stem}: no benchmark module {desc.module}")
        data = json.loads((RESULTS / f"{stem}.json").read_text())
        lines += table(stem, desc, data)
    measured = {DESCRIPTIONS[s].module for s in stems}
    lines += [
        "## Not re-measured in this layout yet",
        "",
        "These benchmarks have no stored JSON yet, so no figure of theirs is on this page. Their"
        " figures as recorded at the time, with the commands that produced them, are in"
        " [CHANGELOG.md](../CHANGELOG.md). Each module's docstring says how to run it"
        " (`.venv/bin/python -m MODULE`).",
        "",
    ]
    lines += [f"- `{name}`" for name in modules if name not in measured]
    lines += [
        "",
        "## Where the recorded scripts are now",
        "",
        "Commands recorded before the benchmarks became a package (here and in CHANGELOG.md)"
        " run flat scripts; each"
        " runs today as `python -m` the module beside it, with the same arguments.",
        "",
        "| recorded script | module today |",
        "|---|---|",
    ]
    lines += [f"| `{old}` | `{new}` |" for old, new in MOVED.items()]
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when the page is stale")
    args = parser.parse_args()
    try:
        text = render()
    except (StaleError, json.JSONDecodeError) as exc:
        print(f"results_page: error: {exc}", file=sys.stderr)
        return 2
    if args.check:
        if not PAGE.exists() or PAGE.read_text() != text:
            print(
                f"results_page: {PAGE.relative_to(ROOT)} is stale; run {COMMAND}", file=sys.stderr
            )
            return 1
        return 0
    PAGE.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
