"""The tasks the selection benchmark runs: CodeT's samples and tests, MapCoder's HumanEval and
MBPP runs as candidates, each with its programs, tests and shared inputs."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchmarks.common import SHARED

if TYPE_CHECKING:
    from codegen.evaluation.humaneval import Problem


DEFAULT_DATA = SHARED / "replays" / "codet-codegen16b"
CODE_FILE = "HumanEval_codegen16B_temp0.8_topp0.95_num100_max300_code_solution.jsonl"
TEST_FILE = "HumanEval_codegen16B_temp0.8_topp0.95_num100_max300_test_case.jsonl"


TESTS_PER_SAMPLE = 5  # CodeT's choice


def truncate(completion: str) -> str:
    """CodeT's cut: stop at the first top-level def/class/if/print/# line."""
    lines = completion.split("\n")
    for i, line in enumerate(lines):
        if i > 0 and re.match(r"(def|class|if|print|#)", line):
            return "\n".join(lines[:i])
    return completion


def generated_tests(sample: str, entry_point: str) -> list[str]:
    """The first assertions of one test sample (it continues a prompt ending in ``assert ``)."""
    out: list[str] = []
    for part in re.split(r"\nassert\b", "assert " + sample):
        body = part.removeprefix("assert").strip()
        lines: list[str] = []
        for line in body.split("\n"):
            if lines and (not line.strip() or not line.startswith((" ", "\t"))):
                break
            lines.append(line.strip())
        statement = "assert " + " ".join(lines)
        try:
            tree = ast.parse(statement)
        except SyntaxError:
            continue
        single = len(tree.body) == 1 and isinstance(tree.body[0], ast.Assert)
        if single and entry_point in statement:
            out.append(ast.unparse(tree))
        if len(out) == TESTS_PER_SAMPLE:
            break
    return out


def example_tests(problem: Problem) -> list[str]:
    """The prompt's worked examples as assertions, read as the crew's importer reads them
    (``codegen.replay.derived.prompt_examples``: doctest, then the prose styles)."""
    from codegen.replay.derived import prompt_examples

    pairs = prompt_examples(problem)
    tests = [ast.unparse(ast.parse(f"assert ({c}) == ({w})")) for c, w in pairs]
    return list(dict.fromkeys(tests))


def _calls_of(assertions: list[str]) -> list[str]:
    return [a.removeprefix("assert ") for a in assertions]


def shared_inputs(
    entry: str,
    examples: list[str],
    generated: list[str],
    seed: int,
    prompt: str = "",
    bare_prompt: str = "",
) -> tuple[list[list[Any]], list[int], list[int]]:
    """The union of two input sets, and the indices of each: without examples (the generated
    tests' call sites and their mutations: CodeT's setting; with no call site, seeds from the
    signature of ``bare_prompt``, CodeT's prompt with the examples removed, as the crew seeds
    from its spec's signature) and with them (the examples' calls and the other calls written
    in the HumanEval prompt too, and mutations of all)."""
    from codegen.agents.pick.inputs import InputBudget, inputs_for

    budget = InputBudget(seed=seed)
    without = inputs_for(entry, [], generated, budget, signature=bare_prompt)
    with_ex = inputs_for(
        entry,
        _calls_of(examples),
        generated,
        budget,
        prose=[prompt],
        signature=prompt,
    )
    union: dict[str, list[Any]] = {}
    for item in [*without, *with_ex]:
        union.setdefault(item.key(), list(item.args))
    keys = list(union)
    return (
        list(union.values()),
        [keys.index(i.key()) for i in without],
        [keys.index(i.key()) for i in with_ex],
    )


def load_tasks(data: Path, limit: int | None, seed: int) -> list[dict[str, Any]]:
    from codegen.evaluation.humaneval import load_problems, task_key

    problems = load_problems()
    gen = [json.loads(line) for line in (data / "HumanEval_for_code_generation.jsonl").open()]
    tgen = [json.loads(line) for line in (data / "HumanEval_for_test_case_generation.jsonl").open()]
    code = {r["prompt"]: r["samples"] for r in map(json.loads, (data / CODE_FILE).open())}
    tests = {r["prompt"]: r["samples"] for r in map(json.loads, (data / TEST_FILE).open())}
    test_prompt = {r["task_id"]: r["prompt"] for r in tgen}
    tasks = []
    for row in gen[:limit]:
        entry = row["entry_point"]
        prompt = problems[task_key(row["task_id"])].prompt
        examples = example_tests(problems[task_key(row["task_id"])])
        generated: list[str] = []
        for sample in tests[test_prompt[row["task_id"]]]:
            generated.extend(generated_tests(sample, entry))
        generated = [t for t in dict.fromkeys(generated) if t not in examples]
        samples = [row["prompt"] + truncate(s) for s in code[row["prompt"]]]
        programs = list(dict.fromkeys(samples))
        inputs, without, with_ex = shared_inputs(
            entry, examples, generated, seed, prompt, bare_prompt=row["prompt"]
        )
        tasks.append(
            {
                "task_id": row["task_id"],
                "entry_point": entry,
                "programs": programs,
                "sample_program": [programs.index(s) for s in samples],
                "tests": examples + generated,
                "trusted": [True] * len(examples) + [False] * len(generated),
                "hidden": row["test"],
                "inputs": inputs,
                "inputs_without_examples": without,
                "inputs_with_examples": with_ex,
            }
        )
    return tasks


def load_mapcoder(folder: Path, limit: int | None, seed: int) -> list[dict[str, Any]]:
    """MapCoder's HumanEval runs (``../shared/replays/mapcoder/``): per task, each run's
    extracted code (``source_codes[-1]``, after the prompt) as one candidate, files in name
    order. There are no generated tests: the rows are the docstring's worked examples, and
    the shared inputs are the prompt's calls (examples and the other literal calls it writes
    out) and their mutations."""
    from codegen.agents.pick.inputs import InputBudget, inputs_for
    from codegen.evaluation.humaneval import load_problems

    problems = load_problems()
    files = sorted(folder.glob("*.jsonl"))
    runs = [{r["task_id"]: r for r in map(json.loads, f.open())} for f in files]
    ids = sorted(problems, key=lambda k: int(re.findall(r"\d+", k)[-1]))
    tasks = []
    for key in ids[:limit]:
        problem = problems[key]
        entry = problem.entry_point
        examples = example_tests(problem)
        codes = [((run.get(problem.task_id) or {}).get("source_codes") or [""])[-1] for run in runs]
        samples = [problem.prompt + "\n" + code for code in codes]
        programs = list(dict.fromkeys(samples))
        with_ex = inputs_for(
            entry,
            _calls_of(examples),
            [],
            InputBudget(seed=seed),
            prose=[problem.prompt],
            signature=problem.prompt,
        )
        tasks.append(
            {
                "task_id": problem.task_id,
                "entry_point": entry,
                "programs": programs,
                "sample_program": [programs.index(s) for s in samples],
                "tests": examples,
                "trusted": [True] * len(examples),
                "hidden": problem.test,
                "inputs": [list(i.args) for i in with_ex],
                "inputs_without_examples": [],
                "inputs_with_examples": list(range(len(with_ex))),
                "files": [f.stem for f in files],
                "codes": codes,
            }
        )
    return tasks


def load_mapcoder_mbpp(
    folder: Path, tasks_file: Path, limit: int | None, seed: int
) -> list[dict[str, Any]]:
    """MapCoder's MBPP runs (``../shared/replays/mapcoder-mbpp/``): per task, each run's
    extracted code (``source_codes[-1]``, after the prompt, which carries the typing imports)
    as one candidate, files in name order. The worked examples are the task set's visible
    ``sample_io`` (``tasks_file``, the 397-task set: one public example per task, the same for
    every run); the hidden test is the rows' own ``test``, the one the authors ran (their
    counts reproduce only against it)."""
    from codegen.agents.pick.inputs import InputBudget, inputs_for

    files = sorted(folder.glob("*.jsonl"))
    runs = [{r["task_id"]: r for r in map(json.loads, f.open())} for f in files]
    visible = {r["name"]: r.get("sample_io") or [] for r in map(json.loads, tasks_file.open())}
    tasks = []
    for key in sorted(runs[0])[:limit]:
        first = runs[0][key]
        entry, prompt = first["entry_point"], first["prompt"]
        examples: list[str] = []
        for text in visible.get(key, []):
            try:
                examples.append(ast.unparse(ast.parse(text.strip())))
            except SyntaxError:
                continue
        codes = [((run.get(key) or {}).get("source_codes") or [""])[-1] for run in runs]
        samples = [prompt + "\n" + code for code in codes]
        programs = list(dict.fromkeys(samples))
        with_ex = inputs_for(
            entry,
            _calls_of(examples),
            [],
            InputBudget(seed=seed),
            prose=[prompt],
            signature=prompt,
        )
        tasks.append(
            {
                "task_id": key,
                "entry_point": entry,
                "programs": programs,
                "sample_program": [programs.index(s) for s in samples],
                "tests": examples,
                "trusted": [True] * len(examples),
                "hidden": first["test"],
                "inputs": [list(i.args) for i in with_ex],
                "inputs_without_examples": [],
                "inputs_with_examples": list(range(len(with_ex))),
                "files": [f.stem for f in files],
                "codes": codes,
            }
        )
    return tasks
