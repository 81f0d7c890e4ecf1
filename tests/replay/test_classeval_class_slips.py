"""Docstring examples that slip on the class's name, read on the skeleton's class: a class
name nothing defines, and a method that takes ``self`` called on the class itself (skeletons
written here in ClassEval's shape; none of the files in ../shared is used)."""

from __future__ import annotations

from dataclasses import astuple
from pathlib import Path

from codegen.replay.classeval import ClassEvalTask
from codegen.replay.classeval_derived import class_examples, classeval_tests
from tests.replay.test_classeval_import import run_tests

# The docstrings name the class as an earlier version of it (``Tokens``) and call its methods
# on the class; ``join`` is a static method, called on the class as it should be.
TOKENS_SKELETON = '''class Tokens2:
    """
    Splits sentences into words.
    """

    def split_all(self, sentences):
        """
        >>> Tokens.split_all(['a b', 'c'])
        [['a', 'b'], ['c']]
        """

    def count(self, sentences, lower=False):
        """
        >>> Tokens2.count(['A b'], lower=True)
        2
        >>> MAX.count(['a'])
        1
        """

    def reset(self):
        """
        >>> Tokens2.reset()
        >>> Tokens2.count(['a'])
        1
        """

    @staticmethod
    def join(words):
        """
        >>> Tokens2.join(['a', 'b'])
        'a b'
        """
'''
TOKENS_SOLUTION = """class Tokens2:
    def split_all(self, sentences):
        return [s.split() for s in sentences]

    def count(self, sentences, lower=False):
        return sum(len(s.split()) for s in sentences)

    def reset(self):
        pass

    @staticmethod
    def join(words):
        return " ".join(words)
"""
# The constructor needs an argument: no instance is made up for a call on the class, while
# an explicit ``self`` (``Scaled.scale(s, 3)``) is a call as written.
SCALED_SKELETON = '''class Scaled:
    def __init__(self, factor):
        self.factor = factor

    def scale(self, value):
        """
        >>> Scaled.scale(2)
        4
        >>> s = Scaled(2)
        >>> Scaled.scale(s, 3)
        6
        """
'''


def tokens(skeleton: str = TOKENS_SKELETON) -> ClassEvalTask:
    return ClassEvalTask("ClassEval_910", "Tokens2", skeleton, ())


def test_a_slip_on_the_class_runs_on_a_fresh_instance_of_the_skeletons_class() -> None:
    assert [astuple(e) for e in class_examples(tokens())] == [
        ("split_all", [], "Tokens2().split_all(['a b', 'c'])", "[['a', 'b'], ['c']]"),
        ("count", [], "Tokens2().count(['A b'], lower=True)", "2"),
        # A constant's name is no class's; reset's change is gone with its instance.
        ("join", [], "Tokens2.join(['a', 'b'])", "'a b'"),
    ]


def test_a_stranger_is_the_class_only_when_the_skeleton_defines_one() -> None:
    two = tokens(TOKENS_SKELETON + "\n\nclass Helper:\n    pass\n")
    assert [e.call for e in class_examples(two)] == [
        "Tokens2().count(['A b'], lower=True)",
        "Tokens2.join(['a', 'b'])",
    ]


def test_no_argument_is_guessed_for_a_constructor_that_needs_one() -> None:
    scaled = ClassEvalTask("ClassEval_911", "Scaled", SCALED_SKELETON, ())
    assert [astuple(e) for e in class_examples(scaled)] == [
        ("scale", ["s = Scaled(2)"], "Scaled.scale(s, 3)", "6"),
    ]


def test_the_derived_tests_now_tell_a_wrong_class_from_a_right_one(tmp_path: Path) -> None:
    tests = classeval_tests(tokens())
    (tmp_path / "right").mkdir()
    (tmp_path / "wrong").mkdir()
    right = run_tests(tmp_path / "right", TOKENS_SOLUTION, tests)
    assert right.returncode == 0 and "4 passed" in right.stdout, right.stdout
    wrong = run_tests(
        tmp_path / "wrong", TOKENS_SOLUTION.replace("[s.split() for", "[[s] for"), tests
    )
    assert wrong.returncode == 1 and "1 failed" in wrong.stdout, wrong.stdout
