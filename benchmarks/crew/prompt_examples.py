"""What the replay importer reads as worked examples from HumanEval's 164 prompts, and
which prompts state ranges that keep the generated inputs in (``agents.pick.inputs.stated_bounds``).

    .venv/bin/python -m benchmarks.crew.prompt_examples

The importer derives the analyzer's examples and the test designer's assertions from the
prompt (``codegen.replay.derived.prompt_examples``): a docstring's ``>>>`` examples, else
the ones it writes in prose (``codegen.replay.examples``), as calls (``f(x) ➞ y``, ``f(x)
should return y.``) or as parameter values (``For x = 1 the output should be y``, ``Input:
x = 1`` / ``Output: y``). Prints one JSON object: the tasks with ``>>>`` examples, the prose
examples by style (and the tasks with examples given as parameter values), the tasks left
with none, and the tasks whose prompt states a range for a
parameter or its length (``0 <= k <= len(arr)``). Reads only the public prompts; nothing is
executed.
"""

from __future__ import annotations

import json

from codegen.agents.pick.inputs import params_of, stated_bounds
from codegen.evaluation.humaneval import load_problems
from codegen.replay.derived import doctest_examples, prompt_examples, written_docstring
from codegen.replay.examples import written_examples


def main() -> None:
    with_doctest: list[str] = []
    without: list[str] = []
    ranged: list[str] = []
    prose = {"tasks": 0, "examples": 0, "as_calls": 0, "as_parameter_values": 0}
    with_parameter_values: list[str] = []
    for problem in load_problems().values():
        docstring, _ = written_docstring(problem)
        found = prompt_examples(problem)
        if stated_bounds(problem.prompt, params_of(problem.prompt, problem.entry_point)):
            ranged.append(problem.task_id)
        if doctest_examples(docstring):
            with_doctest.append(problem.task_id)
        elif not found:
            without.append(problem.task_id)
        else:
            calls = written_examples(docstring, problem.entry_point)  # no parameter names
            prose["tasks"] += 1
            prose["examples"] += len(found)
            prose["as_calls"] += len(calls)
            prose["as_parameter_values"] += len(found) - len(calls)
            if len(found) > len(calls):
                with_parameter_values.append(problem.task_id)
    report = {
        "tasks": len(with_doctest) + prose["tasks"] + len(without),
        "with_doctest_examples": len(with_doctest),
        "prose": prose,
        "tasks_with_parameter_value_examples": with_parameter_values,
        "without_examples": without,
        "stated_ranges": ranged,
    }
    print(json.dumps(report))


if __name__ == "__main__":
    main()
