"""Issue 46's payloads against the verdicts themselves (findings 1, 2 and 8a): a wrong
candidate that writes the files the test side reads, forces the old in-process way and forges
its pass there, or ends ``all(map(...))`` early. Each succeeds when the wrong candidate comes
out passed."""

from __future__ import annotations

import textwrap

from benchmarks.verdicts.payload_kit import (
    BLOCKED,
    ERROR,
    SUCCEEDED,
    Result,
    limits,
    passed_if_wrong,
    problem,
    report_line,
    result,
    sandbox,
    verdict_of,
)

# -- 1: files the test side reads, written by the candidate -----------------------------------

# Every folder the candidate may guess the test side reads from: its own, its parents, the
# first entries of its search path and /work (the layout before the fix).
GUESS_DIRS = """
import os, sys
def _guess_dirs():
    found = []
    here = os.getcwd()
    for d in [here, os.path.dirname(here), "/work", *sys.path[:2]]:
        if d and os.path.isdir(d) and d not in found and "python3" not in d:
            found.append(d)
    return found
"""

WRONG_ADD = "\ndef add(a, b):\n    return a - b\n"
ADD_TEST = "from solution import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"


def planted_init(backend: str) -> list[Result]:
    """1a: the draft writes ``__init__.py`` where pytest's rootdir is; pytest imports it on the
    test side, where it replaces ``Function.runtest``."""
    plant = "import _pytest.python\n_pytest.python.Function.runtest = lambda self: None\n"
    solution = (
        GUESS_DIRS
        + f"for _d in _guess_dirs():\n    try:\n        open(os.path.join(_d, '__init__.py'),"
        f" 'w').write({plant!r})\n    except OSError:\n        pass\n" + WRONG_ADD
    )
    with sandbox(backend) as box:
        report = box.run_pytest(solution, ADD_TEST, limits())
    return [passed_if_wrong("1a_planted_init_py", report.ok, report_line(report))]


def test_file_swapped(backend: str) -> list[Result]:
    """1b: the draft replaces ``test_solution.py`` by a folder of passing tests."""
    solution = (
        GUESS_DIRS
        + textwrap.dedent(
            """
            for _d in _guess_dirs():
                _p = os.path.join(_d, "test_solution.py")
                try:
                    if os.path.isfile(_p):
                        os.remove(_p)
                        os.mkdir(_p)
                        with open(os.path.join(_p, "test_ok.py"), "w") as _fh:
                            _fh.write("def test_ok():\\n    assert True\\n")
                except OSError:
                    pass
            """
        )
        + WRONG_ADD
    )
    with sandbox(backend) as box:
        report = box.run_pytest(solution, ADD_TEST, limits())
    return [passed_if_wrong("1b_test_file_swapped_for_folder", report.ok, report_line(report))]


MEAN_PROMPT = 'def mean_of(xs):\n    """The arithmetic mean of xs."""\n'
MEAN_TEST = (
    "def check(candidate):\n    assert candidate([1, 2, 3]) == 2\n"
    "    assert candidate([4, 8]) == 6\n"
)
HONEST_MEAN = "from statistics import mean\n\n\ndef mean_of(xs):\n    return mean(xs)\n"


def cross_sample_plant(backend: str) -> list[Result]:
    """1c: in one scoring batch, sample 0 writes ``statistics.py`` where the next sample's
    imports look first; the honest sample 1 then imports it and turns wrong."""
    from codegen.evaluation.scoring import score_candidates

    planter = (
        GUESS_DIRS
        + "for _d in _guess_dirs():\n    try:\n        open(os.path.join(_d, 'statistics.py'),"
        " 'w').write('def mean(xs):\\n    return 42\\n')\n    except OSError:\n        pass\n"
        + "\ndef mean_of(xs):\n    return 0\n"
    )
    task = problem("Payload/1c", MEAN_PROMPT, "mean_of", MEAN_TEST)
    with sandbox(backend) as box:
        control = score_candidates(box, task, [HONEST_MEAN], limits(timeout_s=10.0))[0]
        if not control.passed:
            return [result("1c_cross_sample_plant", ERROR, f"control: {verdict_of(control)}")]
        _, honest = score_candidates(box, task, [planter, HONEST_MEAN], limits(timeout_s=10.0))
    line = f"honest sample after the plant: {verdict_of(honest)} (alone: passed)"
    return [result("1c_cross_sample_plant", BLOCKED if honest.passed else SUCCEEDED, line)]


# -- 2: a value that cannot cross sends the sample back to the old way, which it forges ----

MARKER_CLASS = "\n\nclass _Marker:\n    pass\n"
DOUBLE_PROMPT = 'def double(x):\n    """Twice x."""\n'
DOUBLE_TEST = (
    "def check(candidate):\n    assert candidate(candidate(1)) == 4\n"
    "    assert candidate(5) == 10\n"
)


def class_forces_old_way_humaneval(backend: str) -> list[Result]:
    """2a: ``double`` returns a class object; the test hands it back, which could not cross,
    so the sample ran again in the test's process, where the candidate walks the stack to the
    verdict's token and prints a pass under it."""
    from codegen.evaluation.scoring import score_candidates

    candidate = (
        textwrap.dedent(
            """
            import json, os, re, sys

            def _forge():
                frame = sys._getframe()
                while frame is not None:
                    token = frame.f_locals.get("token")
                    if isinstance(token, str) and re.fullmatch("[0-9a-f]{32}", token):
                        line = json.dumps({"category": "passed", "message": ""})
                        sys.stdout.write("\\n" + token + " " + line + "\\n")
                        sys.stdout.flush()
                        os._exit(0)
                    frame = frame.f_back

            _forge()
            """
        )
        + MARKER_CLASS
        + "\n\ndef double(x):\n    _forge()\n    return _Marker\n"
    )
    task = problem("Payload/2a", DOUBLE_PROMPT, "double", DOUBLE_TEST)
    with sandbox(backend) as box:
        score = score_candidates(box, task, [candidate], limits(timeout_s=10.0))[0]
    return [
        passed_if_wrong("2a_class_object_forces_old_way_humaneval", score.passed, verdict_of(score))
    ]


def class_forces_old_way_pytest(backend: str) -> list[Result]:
    """2b: the same in the crew's pytest run: in pytest's own process the solution patches
    ``TestReport`` so every test reports passed."""
    solution = (
        textwrap.dedent(
            """
            import sys

            def _forge():
                reports = sys.modules.get("_pytest.reports")
                if reports is None:
                    return
                original = reports.TestReport.from_item_and_call.__func__

                def forged(cls, item, call):
                    report = original(cls, item, call)
                    report.outcome, report.longrepr = "passed", None
                    return report

                reports.TestReport.from_item_and_call = classmethod(forged)

            _forge()
            """
        )
        + MARKER_CLASS
        + "\n\ndef double(x):\n    return _Marker\n"
    )
    test = (
        "from solution import double\n\n\ndef test_round_trip():\n"
        "    assert double(double(1)) == 4\n\n\ndef test_five():\n    assert double(5) == 10\n"
    )
    with sandbox(backend) as box:
        report = box.run_pytest(solution, test, limits())
    return [
        passed_if_wrong("2b_class_object_forces_old_way_pytest", report.ok, report_line(report))
    ]


CODEC_TEST = textwrap.dedent(
    """
    import unittest


    class CodecTestRoundTrip(unittest.TestCase):
        def test_round_trip(self):
            codec = Codec()
            self.assertEqual(codec.decode(codec.encode(3)), 3)

        def test_encode(self):
            self.assertEqual(Codec().encode(3), "3")
    """
)


def class_forces_old_way_classeval(backend: str) -> list[Result]:
    """2c: the same in ClassEval scoring: in the test's process the candidate patches
    ``unittest.TestResult`` so no failure or error is recorded."""
    from codegen.evaluation.classeval import score_classes
    from codegen.evaluation.humaneval import ClassTask

    candidate = (
        textwrap.dedent(
            """
            import unittest

            def _ignore(self, test, err):
                pass

            unittest.TestResult.addError = _ignore
            unittest.TestResult.addFailure = _ignore
            """
        )
        + MARKER_CLASS
        + textwrap.dedent(
            """

            class Codec:
                def encode(self, x):
                    return _Marker

                def decode(self, y):
                    return y
            """
        )
    )
    skeleton = (
        "class Codec:\n    def encode(self, x):\n        pass\n\n"
        "    def decode(self, y):\n        pass\n"
    )
    task = problem(
        "ClassEval_payload_2c",
        skeleton,
        "Codec",
        CODEC_TEST,
        classeval=ClassTask(imports=("import unittest",), test_classes=("CodecTestRoundTrip",)),
    )
    with sandbox(backend) as box:
        score = score_classes(box, task, [candidate], limits())[0]
    return [
        passed_if_wrong("2c_class_object_forces_old_way_classeval", score.passed, verdict_of(score))
    ]


def stop_iteration(backend: str) -> list[Result]:
    """8a: the candidate raises StopIteration from a call, ending ``all(map(...))`` early."""
    from codegen.evaluation.scoring import score_candidates

    task = problem(
        "Payload/8a",
        'def is_positive(x):\n    """True when x > 0."""\n',
        "is_positive",
        "def check(candidate):\n    assert all(map(candidate, [1, 2, 3]))\n"
        "    assert not any(map(candidate, [-1, -2]))\n",
    )
    candidate = "def is_positive(x):\n    raise StopIteration\n"
    with sandbox(backend) as box:
        score = score_candidates(box, task, [candidate], limits(timeout_s=10.0))[0]
    return [passed_if_wrong("8a_stop_iteration_ends_all_map", score.passed, verdict_of(score))]
