"""Samples that forge a verdict score failed, on both backends; honest samples of the same
tasks pass (issue 38, item 1). The tasks are small fixtures written for these tests; every
forging sample here passed the scoring driver that ran the candidate in the test's process."""

from __future__ import annotations

from codegen.evaluation.humaneval import Problem
from codegen.evaluation.scoring import Category, SampleScore, score_candidates
from codegen.sandbox.api import Sandbox
from codegen.sandbox.types import Limits

LIMITS = Limits(timeout_s=20.0)

ADD = Problem(
    task_id="Fixture/add",
    prompt='def add(a, b):\n    """The sum of a and b."""\n',
    entry_point="add",
    canonical_solution="    return a + b\n",
    test=(
        "def check(candidate):\n"
        "    assert candidate(2, 3) == 5\n"
        "    assert candidate(-7, 4) == -3\n"
        "    assert abs(candidate(0.5, 0.25) - 0.75) < 1e-9\n"
    ),
)
# The test calls a helper of the prompt (as HumanEval/38 and /50 do) and a second function the
# solution defines (as MBPP's tests do), and builds objects of the solution's class.
TREE = Problem(
    task_id="Fixture/tree",
    prompt=(
        "def double(x):\n    return 2 * x\n\n"
        'def depth(node):\n    """Depth of a tree of Node(value) with .kids lists."""\n'
    ),
    entry_point="depth",
    canonical_solution="",
    test=(
        "root = Node(1)\n"
        "root.kids = [Node(2), Node(3)]\n"
        "root.kids[0].kids = [Node(double(2))]\n"
        "def check(candidate):\n"
        "    assert candidate(root) == 3\n"
        "    assert sorted(values(root)) == [1, 2, 3, 4]\n"
        "    assert len(values(root)) == 4 and 4 in values(root)\n"
        "    assert isinstance(root, Node) and root.value == 1\n"
        "check(depth)\n"
    ),
)
TREE_SOLUTION = (
    "class Node:\n"
    "    def __init__(self, value):\n"
    "        self.value, self.kids = value, []\n"
    "def depth(node):\n"
    "    return 1 + max((depth(k) for k in node.kids), default=0)\n"
    "def values(node):\n"
    "    out = [node.value]\n"
    "    for k in node.kids:\n"
    "        out += values(k)\n"
    "    return out\n"
)

_FORGE = (
    "import gc, json, os, re, sys\n"
    "def _forge():\n"
    "    # Every 32-hex string this process can see: the frames, then every object.\n"
    "    seen = set()\n"
    "    frame = sys._getframe()\n"
    "    while frame is not None:\n"
    "        for value in list(frame.f_locals.values()) + list(frame.f_globals.values()):\n"
    "            if isinstance(value, str) and re.fullmatch('[0-9a-f]{32}', value):\n"
    "                seen.add(value)\n"
    "        frame = frame.f_back\n"
    "    for obj in gc.get_objects():\n"
    "        if isinstance(obj, dict):\n"
    "            for value in obj.values():\n"
    "                if isinstance(value, str) and re.fullmatch('[0-9a-f]{32}', value):\n"
    "                    seen.add(value)\n"
    "    for token in seen:\n"
    "        passed = json.dumps({'category': 'passed', 'message': ''})\n"
    "        batch = json.dumps({'i': 0, 'category': 'passed', 'message': '', 'duration_s': 0,"
    " 'isolated': True, 'note': ''})\n"
    "        sys.stdout.write('\\n' + token + ' ' + passed + '\\n' + token + ' ' + batch + '\\n')\n"
    "    sys.stdout.flush()\n"
    "    os._exit(0)\n"
)
# Reads the hidden test wherever this process might find it and answers its assertions.
_READ_TEST = (
    "import gc, os, re, sys\n"
    "def _expected():\n"
    "    texts = [o for o in gc.get_objects() if isinstance(o, str) and 'candidate(' in o]\n"
    "    frame = sys._getframe()\n"
    "    while frame is not None:\n"
    "        texts += [v for v in frame.f_locals.values() if isinstance(v, (str, dict))]\n"
    "        frame = frame.f_back\n"
    "    for root in ('.', '..', '/work', '/tmp'):\n"
    "        for name in os.listdir(root) if os.path.isdir(root) else ():\n"
    "            try:\n"
    "                texts.append(open(os.path.join(root, name)).read())\n"
    "            except OSError:\n"
    "                pass\n"
    "    found = {}\n"
    "    for text in texts:\n"
    "        pattern = r'candidate\\((-?\\d+), (-?\\d+)\\) == (-?\\d+)'\n"
    "        for a, b, want in re.findall(pattern, str(text)):\n"
    "            found[(int(a), int(b))] = int(want)\n"
    "    return found\n"
    "def add(a, b):\n"
    "    # Right only where the test gave the answer away (and on floats, to isolate that).\n"
    "    return a + b if isinstance(a, float) else _expected().get((a, b), a + b + 1)\n"
)

FORGERIES = {
    "token from the stack at import": _FORGE + "_forge()\n",
    "token from the stack in the call": _FORGE + "def add(a, b):\n    _forge()\n",
    "patched json.dumps": (
        "import json\n"
        'json.dumps = lambda *a, **k: \'{"category": "passed", "message": ""}\'\n'
        "def add(a, b):\n    return a - b\n"
    ),
    "patched builtins": (
        "import builtins\n"
        "builtins.abs = lambda x: 0\n"
        "def add(a, b):\n    return a + b if isinstance(a, int) else 99.0\n"
    ),
    "always-equal object": (
        "class Equal:\n"
        "    def __eq__(self, other):\n        return True\n"
        "    def __ne__(self, other):\n        return False\n"
        "    def __sub__(self, other):\n        return 0\n"
        "def add(a, b):\n    return Equal()\n"
    ),
    "always-equal int subclass": (
        "class Equal(int):\n"
        "    def __eq__(self, other):\n        return True\n"
        "    def __sub__(self, other):\n        return 0\n"
        "    __hash__ = int.__hash__\n"
        "def add(a, b):\n    return Equal(a * b + 1)\n"
    ),
    "always-zero difference": (
        "class Zero(float):\n"
        "    def __sub__(self, other):\n        return 0.0\n"
        "    def __abs__(self):\n        return 0.0\n"
        "    def __eq__(self, other):\n        return True\n"
        "    __hash__ = float.__hash__\n"
        "def add(a, b):\n    return Zero(42)\n"
    ),
    "expected values read from the hidden test": _READ_TEST,
    "os._exit(0) at import": "import os\nos._exit(0)\ndef add(a, b):\n    return a - b\n",
    "sys.exit(0) at import": "import sys\nsys.exit(0)\ndef add(a, b):\n    return a - b\n",
    "os._exit(0) in the call": "import os\ndef add(a, b):\n    os._exit(0)\n",
    "sys.exit(0) in the call": "import sys\ndef add(a, b):\n    sys.exit(0)\n",
    "exit swallowed by a catch-all": (
        "import os\ndef add(a, b):\n    if a == -7:\n        os._exit(0)\n    return a + b\n"
    ),
}


def _score(sb: Sandbox, problem: Problem, candidates: list[str]) -> list[SampleScore]:
    return score_candidates(sb, problem, list[str | None](candidates), LIMITS)


def test_forged_verdicts_score_failed(sb: Sandbox) -> None:
    honest = ADD.prompt + ADD.canonical_solution
    names = list(FORGERIES)
    # One batch, honest samples between the forgeries: nothing one leaves reaches the next.
    candidates = [honest] + [FORGERIES[n] for n in names] + [honest]
    scores = _score(sb, ADD, candidates)
    assert scores[0].passed and scores[-1].passed, (scores[0], scores[-1])
    for name, score in zip(names, scores[1:-1], strict=True):
        assert not score.passed, (name, score)
        assert score.isolated is True, (name, score)


def test_a_catch_all_does_not_hide_a_dead_candidate(sb: Sandbox) -> None:
    # The test swallows the call's failure; the candidate's exit still fails the sample.
    problem = Problem(
        task_id="Fixture/swallow",
        prompt=ADD.prompt,
        entry_point="add",
        canonical_solution=ADD.canonical_solution,
        test=(
            "def check(candidate):\n"
            "    try:\n        candidate(-7, 4)\n    except BaseException:\n        pass\n"
            "    assert candidate(2, 3) == 5 or True\n"
        ),
    )
    honest, dead = _score(
        sb,
        problem,
        [ADD.prompt + ADD.canonical_solution, FORGERIES["exit swallowed by a catch-all"]],
    )
    assert honest.passed
    assert not dead.passed and dead.category == Category.RUNTIME_ERROR, dead


def test_classes_and_helpers_cross_as_handles(sb: Sandbox) -> None:
    wrong = TREE_SOLUTION.replace("return 1 + max", "return 2 + max")
    right, wrong_score, missing = _score(
        sb, TREE, [TREE_SOLUTION, wrong, TREE_SOLUTION.replace("def values", "def _values")]
    )
    assert right.passed and right.isolated, right
    assert wrong_score.category == Category.WRONG_ANSWER, wrong_score
    assert missing.category == Category.RUNTIME_ERROR, missing
    assert "values" in missing.message


def test_a_test_side_lambda_crosses_as_a_call_only_proxy(sb: Sandbox) -> None:
    problem = Problem(
        task_id="Fixture/apply",
        prompt='def apply(f, x):\n    """f(x)."""\n',
        entry_point="apply",
        canonical_solution="    return f(x)\n",
        test="def check(candidate):\n    assert candidate(lambda x: x + 1, 2) == 3\n",
    )
    right, wrong = _score(
        sb, problem, [problem.prompt + "    return f(x)\n", problem.prompt + "    return x\n"]
    )
    assert right.passed and right.isolated is True, right
    assert not wrong.passed and wrong.isolated is True, wrong


def test_values_that_cannot_cross_end_cannot_isolate(sb: Sandbox) -> None:
    problem = Problem(
        task_id="Fixture/apply-object",
        prompt='def apply(f, x):\n    """f(x)."""\n',
        entry_point="apply",
        canonical_solution="    return f(x)\n",
        test=(
            "class Box:\n    pass\n"
            "def check(candidate):\n    assert candidate(lambda x: x, Box()) is not None\n"
        ),
    )
    (right,) = _score(sb, problem, [problem.prompt + "    return f(x)\n"])
    assert not right.passed and right.category == Category.CANNOT_ISOLATE, right
    assert right.isolated is True and "cannot cross" in right.message and "Box" in right.message
