"""A new task shape is its own module and one registration: nothing else of codegen changes.

The module below (``SHAPE_MODULE``) is all a toy shape needs: tasks whose answer is a
constant, in a task file format of their own (``{"constant": id, "answer": value}`` lines)
with replies of their own (the same lines, the model's answer), scored by a scorer of its own
and reported with figures of its own. Named in ``[eval] benchmarks``, it runs end to end
through ``codegen eval tasks``: ``--canonical`` and ``--samples-file``, the real sandbox.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from codegen.evaluation import shapes
from codegen.orchestration.cli import main
from codegen.settings import get_settings

pytestmark = pytest.mark.docker

SHAPE_MODULE = '''
import json

from codegen.evaluation.humaneval import Problem, task_key
from codegen.evaluation.scoring import score_candidates
from codegen.evaluation.shapes import register_shape
from codegen.evaluation.task_shape import TaskShape

SCORED = []  # the problems this scorer was asked about


def claims(text):
    return text.lstrip().startswith('{"constant"')


def module(answer):
    return f"def answer():\\n    return {answer!r}\\n"


def read_file(text, path):
    problems = {}
    for line in text.splitlines():
        task = json.loads(line)
        problems[task_key(task["constant"])] = Problem(
            task_id=task["constant"],
            prompt='def answer():\\n    """The constant."""\\n',
            entry_point="answer",
            canonical_solution=module(task["answer"]),
            test=f"def check(candidate):\\n    assert candidate() == {task['answer']!r}\\n",
            shape="constant",
        )
    return problems


def read_replies(text, path, problems):
    modules = {}
    for line in text.splitlines():
        reply = json.loads(line)
        modules.setdefault(task_key(reply["constant"]), []).append(module(reply["answer"]))
    return modules, "digest-" + str(len(text))


def score(sandbox, problem, codes, limits):
    SCORED.append(problem.key)
    return score_candidates(sandbox, problem, codes, limits, len(codes))


def figures(scored):
    right = sum(s.passed for _, scores in scored for s in scores)
    return {"right": right, "answers": sum(len(scores) for _, scores in scored)}


register_shape(
    TaskShape(
        name="constant",
        title="Constants",
        request=lambda problem: "Return the constant " + problem.task_id,
        claims_file=claims,
        read_file=read_file,
        claims_replies=claims,
        read_replies=read_replies,
        score=score,
        scoring_version="1",
        figures=figures,
        describe=lambda f, every: [f"constants right: {f['right']}/{f['answers']}"],
    )
)
'''


@pytest.fixture
def constant_shape(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The shape's module on the path, named in settings; a two-task file in its format."""
    (tmp_path / "constant_shape.py").write_text(SHAPE_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("CODEGEN_EVAL__BENCHMARKS", '["constant_shape"]')
    get_settings.cache_clear()
    tasks = tmp_path / "constants.jsonl"
    lines = [{"constant": "Const/one", "answer": 1}, {"constant": "Const/word", "answer": "w"}]
    tasks.write_text("".join(json.dumps(t) + "\n" for t in lines))
    yield tasks
    shapes.unregister_shape("constant")


def run(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, object]:
    capsys.readouterr()
    code = main(["eval", "tasks", *args, "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    return json.loads(out)  # type: ignore[no-any-return]


def test_a_toy_shape_runs_canonical_and_a_samples_file_through_the_command(
    constant_shape: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import constant_shape as shape_module  # type: ignore[import-not-found]

    canonical = run(capsys, str(constant_shape), "--canonical")
    assert canonical["pass_at_k"] == {"pass@1": 1.0} and canonical["tasks_scored"] == 2
    assert canonical["constant"] == {"right": 2, "answers": 2}  # the shape's own figures
    assert sorted(shape_module.SCORED) == ["Const-one", "Const-word"]  # its own scorer ran
    replies = tmp_path / "replies.jsonl"
    rows = [{"constant": "Const/one", "answer": 1}, {"constant": "Const/word", "answer": "x"}]
    replies.write_text("".join(json.dumps(r) + "\n" for r in rows))
    scored = run(capsys, str(constant_shape), "--samples-file", str(replies))
    assert scored["pass_at_k"] == {"pass@1": 0.5}
    assert scored["constant"] == {"right": 1, "answers": 2}
    assert scored["fields"] == {"predict": 2}
    # The text report prints the shape's figures; the crew would get the shape's request.
    capsys.readouterr()
    assert main(["eval", "tasks", str(constant_shape), "--samples-file", str(replies)]) == 0
    assert "constants right: 1/2" in capsys.readouterr().out
    from codegen.evaluation.harness import public_task
    from codegen.evaluation.tasks import read_task_file

    problem = read_task_file(constant_shape).get("Const-one")
    assert public_task(problem).request == "Return the constant Const/one"
