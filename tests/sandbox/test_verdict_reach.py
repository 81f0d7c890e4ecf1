"""A verdict is decided only where the candidate cannot reach, on both backends (issue 46,
findings 1 and 2): files the test side reads or imports are out of the candidate's reach, and
no value of a test sends the candidate back to the test's own process. Every hostile case here
won on 3b8c0a5, the commit before: the planted ``__init__.py`` and the folder of passing tests
came out ``ok`` (pytest's rootdir was the solution's working directory), the planted
``statistics.py`` turned the honest sample after it into ``wrong_answer`` (the driver's folder
was on every candidate's ``sys.path``), and the class objects passed the old way (a frame walk
to the token, patched pytest reports or ``unittest`` results). Whether such a value crosses is
``isolation``'s business; either way the verdict is never a pass, and always isolated."""

from __future__ import annotations

import pytest

from codegen.evaluation.classeval import parse_task, score_classes
from codegen.evaluation.humaneval import Problem
from codegen.evaluation.scoring import Category, SampleScore, score_candidates
from codegen.sandbox.api import Sandbox
from codegen.sandbox.protocol import kernel_fence
from codegen.sandbox.types import CANNOT_ISOLATE, Limits

LIMITS = Limits(timeout_s=20.0)

# Every folder the candidate might reach: its own, the one above, the sandbox's work dir and
# temp dir, each folder under those two, and every writable folder on its sys.path.
_DIRS = (
    "import os, sys\n"
    "def _dirs():\n"
    "    found = [os.getcwd(), os.path.dirname(os.getcwd()), '/work', '/tmp']\n"
    "    for top in ('/work', '/tmp'):\n"
    "        for root, folders, _files in os.walk(top):\n"
    "            found += [os.path.join(root, f) for f in folders]\n"
    "    found += [p for p in sys.path if p and os.access(p, os.W_OK)]\n"
    "    return [d for d in dict.fromkeys(found) if os.path.isdir(d)]\n"
    "def _write(path, text):\n"
    "    try:\n"
    "        with open(path, 'w') as fh:\n"
    "            fh.write(text)\n"
    "    except OSError:\n"
    "        pass\n"
)
# The frame walk of test_forged_verdicts: every 32-hex string in reach printed as a pass.
_FORGE = (
    "import gc, json, re\n"
    "def _forge():\n"
    "    seen, frame = set(), sys._getframe()\n"
    "    while frame is not None:\n"
    "        seen |= {v for v in frame.f_locals.values() if isinstance(v, str)}\n"
    "        frame = frame.f_back\n"
    "    for obj in gc.get_objects():\n"
    "        if isinstance(obj, dict):\n"
    "            seen |= {v for v in obj.values() if isinstance(v, str)}\n"
    "    passed = json.dumps({'category': 'passed', 'message': ''})\n"
    "    for token in (s for s in seen if re.fullmatch('[0-9a-f]{32}', s)):\n"
    "        sys.stdout.write('\\n' + token + ' ' + passed + '\\n')\n"
    "    sys.stdout.flush()\n"
    "    os._exit(0)\n"
)


def _fenced(said: str | None) -> bool:
    """The fence the candidate got is the one this kernel offers (said, never defaulted)."""
    return said == kernel_fence()


# -- the crew's verification (pytest) --------------------------------------------------------

ADD_TESTS = (
    "from solution import add\n\n"
    "def test_small():\n    assert add(1, 2) == 3\n\n"
    "def test_negative():\n    assert add(-5, 2) == -3\n"
)
PLANTS = {
    # pytest imports a package's __init__.py on the test side, where it replaces runtest.
    "plants __init__.py replacing Function.runtest": (
        _DIRS + "HOOK = 'import _pytest.python as p\\np.Function.runtest = lambda self: None\\n'\n"
        "for d in _dirs():\n"
        "    _write(os.path.join(d, '__init__.py'), HOOK)\n"
        "def add(a, b):\n    return 0\n"
    ),
    "replaces test_solution.py by a folder of passing tests": (
        _DIRS + "import shutil\n"
        "PASS = 'def test_small():\\n    pass\\n\\ndef test_negative():\\n    pass\\n'\n"
        "for d in _dirs():\n"
        "    target = os.path.join(d, 'test_solution.py')\n"
        "    if d == os.getcwd() or os.path.isfile(target):\n"
        "        try:\n"
        "            os.remove(target)\n"
        "            os.mkdir(target)\n"
        "        except OSError:\n"
        "            continue\n"
        "        _write(os.path.join(target, 'test_passing.py'), PASS)\n"
        "def add(a, b):\n    return 0\n"
    ),
}


@pytest.mark.parametrize("plant", list(PLANTS))
def test_files_planted_for_pytest_never_pass(sb: Sandbox, plant: str) -> None:
    report = sb.run_pytest(PLANTS[plant], ADD_TESTS, LIMITS)
    assert not report.ok and report.passed == 0, report
    assert report.isolated is True and _fenced(report.fence), report
    honest = sb.run_pytest("def add(a, b):\n    return a + b\n", ADD_TESTS, LIMITS)
    assert honest.ok and honest.passed == 2, honest


def test_a_class_object_never_takes_pytest_to_the_old_way(sb: Sandbox) -> None:
    tests = (
        "from solution import decode, encode\n\n"
        "def test_round_trip():\n    assert decode(encode('ab')) == 'ab'\n"
    )
    solution = (
        "import _pytest.reports as reports\n"
        "_init = reports.TestReport.__init__\n"
        "def _passed(self, *args, **kwargs):\n"
        "    _init(self, *args, **kwargs)\n"
        "    self.outcome, self.longrepr = 'passed', None\n"
        "reports.TestReport.__init__ = _passed\n"
        "class Token:\n    pass\n"
        "def encode(text):\n    return Token\n"
        "def decode(value):\n    return None\n"
    )
    report = sb.run_pytest(solution, tests, LIMITS)
    assert not report.ok and report.passed == 0, report
    assert report.isolated is True and _fenced(report.fence), report


def test_a_value_that_cannot_cross_fails_its_own_test_only(sb: Sandbox) -> None:
    # A test-side builtin handed to the solution: carried across (isolation), or that test
    # fails cannot_isolate, caught or not; the suite's other tests keep their verdicts.
    tests = (
        "from solution import apply\n\n"
        "def test_apply():\n    assert apply(len, 'ab') == 2\n\n"
        "def test_apply_caught():\n"
        "    try:\n        assert apply(len, 'abc') == 3\n"
        "    except BaseException:\n        pass\n\n"
        "def test_plain():\n    assert apply.__name__ == 'apply' or True\n"
    )
    report = sb.run_pytest("def apply(f, x):\n    return f(x)\n", tests, LIMITS)
    assert report.isolated is True, report
    outcomes = {t.name.split("::")[-1]: t for t in report.tests}
    assert outcomes["test_plain"].outcome == "passed", report
    for name in ("test_apply", "test_apply_caught"):
        case = outcomes[name]
        crossed = case.outcome == "passed"
        assert crossed or case.message.startswith(f"{CANNOT_ISOLATE}: "), (name, case)
    assert report.ok == all(t.outcome == "passed" for t in report.tests)


# -- scoring (HumanEval-shaped and ClassEval) ------------------------------------------------

MIDDLE = Problem(
    task_id="Fixture/middle",
    prompt='import statistics\n\n\ndef middle(xs):\n    """The median of xs."""\n',
    entry_point="middle",
    canonical_solution="    return statistics.median(xs)\n",
    test=(
        "def check(candidate):\n"
        "    assert candidate([3, 1, 2]) == 2\n"
        "    assert candidate([4, 1, 3, 2]) == statistics.median([1, 2, 3, 4])\n"
    ),
)
# Writes statistics.py (a standard-library module the task imports) wherever it can reach.
STDLIB_PLANT = (
    _DIRS + "for d in _dirs():\n"
    "    _write(os.path.join(d, 'statistics.py'), 'def median(xs):\\n    return -1\\n')\n"
    "def middle(xs):\n    return -1\n"
)


def _scores(sb: Sandbox, problem: Problem, candidates: list[str]) -> list[SampleScore]:
    return score_candidates(sb, problem, list[str | None](candidates), LIMITS)


def test_a_planted_stdlib_module_reaches_no_later_sample(sb: Sandbox) -> None:
    honest = MIDDLE.prompt + MIDDLE.canonical_solution
    planted, after, again = _scores(sb, MIDDLE, [STDLIB_PLANT, honest, honest])
    assert planted.category == Category.WRONG_ANSWER, planted
    for score in (after, again):
        assert score.passed and score.isolated is True and _fenced(score.fence), score


def test_the_test_and_the_candidate_share_a_scratch_folder(sb: Sandbox) -> None:
    # ClassEval's tests write files the class reads (and read what it writes): both sides work
    # in the sample's scratch folder, a new one for each sample.
    problem = Problem(
        task_id="Fixture/files",
        prompt='def total(path):\n    """Sum of the numbers in path, also put in out.txt."""\n',
        entry_point="total",
        canonical_solution="",
        test=(
            "import os\n"
            "def check(candidate):\n"
            "    assert not os.path.exists('out.txt')\n"
            "    with open('numbers.txt', 'w') as fh:\n        fh.write('1 2 3')\n"
            "    assert candidate('numbers.txt') == 6\n"
            "    assert open('out.txt').read() == '6'\n"
        ),
    )
    solution = (
        "def total(path):\n"
        "    value = sum(int(n) for n in open(path).read().split())\n"
        "    with open('out.txt', 'w') as fh:\n        fh.write(str(value))\n"
        "    return value\n"
    )
    scores = _scores(sb, problem, [solution, solution])
    assert all(s.passed and s.isolated is True for s in scores), scores


def test_the_test_and_the_candidate_share_one_temporary_folder(sb: Sandbox) -> None:
    # ClassEval _92: the test makes a database under tempfile.gettempdir() and hands the path
    # to the class, which the fence lets write only its scratch folder: both sides' temporary
    # folder is that folder. The candidate also reads /etc/mime.types (openpyxl's import).
    problem = Problem(
        task_id="Fixture/tempdir",
        prompt='def count(path):\n    """Rows of table t in the SQLite file at path."""\n',
        entry_point="count",
        canonical_solution="",
        test=(
            "import os, sqlite3\n"
            "from tempfile import gettempdir\n"
            "def check(candidate):\n"
            "    path = os.path.join(gettempdir(), 'test_db.db')\n"
            "    with sqlite3.connect(path) as db:\n"
            "        db.execute('CREATE TABLE t (x)')\n"
            "        db.execute('INSERT INTO t VALUES (1)')\n"
            "    assert candidate(path) == 1\n"
        ),
    )
    solution = (
        "import mimetypes, sqlite3\n"
        "mimetypes.init()\n"
        "def count(path):\n"
        "    with sqlite3.connect(path) as db:\n"
        "        db.execute('INSERT INTO t VALUES (2)')\n"
        "        return db.execute('SELECT count(*) FROM t').fetchone()[0] - 1\n"
    )
    [score] = _scores(sb, problem, [solution])
    assert score.passed and score.isolated is True and _fenced(score.fence), score


CODEC = Problem(
    task_id="Fixture/codec",
    # decode is the solution's (a free name of the test the prompt does not define)
    prompt='def encode(text):\n    """A value that decode (defined beside it) turns back."""\n',
    entry_point="encode",
    canonical_solution="",
    test="def check(candidate):\n    assert decode(candidate('ab')) == 'ab'\n",
)
CLASS_OBJECT = (
    _DIRS + _FORGE + "class Token:\n    pass\n"
    "def encode(text):\n    return Token\n"
    "def decode(value):\n    _forge()\n"
)


def test_a_class_object_never_takes_scoring_to_the_old_way(sb: Sandbox) -> None:
    honest = (
        "def encode(text):\n    return text[::-1]\ndef decode(value):\n    return value[::-1]\n"
    )
    right, forged, right_again = _scores(sb, CODEC, [honest, CLASS_OBJECT, honest])
    assert right.passed and right_again.passed, (right, right_again)
    assert not forged.passed and forged.category != Category.PASSED, forged
    assert forged.isolated is True and _fenced(forged.fence), forged


CODEC_CLASS = parse_task(
    {
        "task_id": "ClassEval_F0",
        "class_name": "Codec",
        "import_statement": [],
        "skeleton": "class Codec:\n    def encode(self, text):\n        pass\n\n"
        "    def decode(self, value):\n        pass\n",
        "methods_info": [{"method_name": "encode", "test_class": "CodecTestRoundTrip"}],
        "test": "import unittest\n\n\nclass CodecTestRoundTrip(unittest.TestCase):\n"
        "    def test_round_trip(self):\n        codec = Codec()\n"
        "        self.assertEqual(codec.decode(codec.encode('ab')), 'ab')\n",
        "test_classes": ["CodecTestRoundTrip"],
        "solution_code": "class Codec:\n    def encode(self, text):\n        return text[::-1]\n\n"
        "    def decode(self, value):\n        return value[::-1]\n",
    },
    "fixture",
)


def test_a_class_object_never_takes_classeval_to_the_old_way(sb: Sandbox) -> None:
    forged = (
        _DIRS + _FORGE + "import unittest\n"
        "unittest.TestResult.addFailure = lambda self, test, err: None\n"
        "unittest.TestResult.addError = lambda self, test, err: None\n"
        "class Codec:\n"
        "    def encode(self, text):\n        return Codec\n"
        "    def decode(self, value):\n        _forge()\n"
    )
    right, wrong = score_classes(sb, CODEC_CLASS, [CODEC_CLASS.canonical_module(), forged], LIMITS)
    assert right.passed and right.isolated is True, right
    assert not wrong.passed and wrong.category != Category.PASSED, wrong
    [verdict] = wrong.test_classes or []
    assert verdict["result"] == "error" and verdict["isolated"] is True, verdict
    assert _fenced(str(verdict["fence"])) and _fenced(wrong.fence), wrong
