"""The registry of task shapes (``codegen.evaluation.task_shape``): every shape, named once.

Built in: the function shape, ClassEval's and APPS's. A shape of one's own is registered with
:func:`register_shape` by its module (a module named in ``[eval] benchmarks`` is imported
before a task file is read, and by every run of a backfill).
"""

from __future__ import annotations

from collections.abc import Iterable

from codegen.evaluation.apps import APPS_SHAPE
from codegen.evaluation.classeval import CLASSEVAL_SHAPE
from codegen.evaluation.humaneval import Problem
from codegen.evaluation.task_shape import FUNCTION_SHAPE, TaskShape

_registry: dict[str, TaskShape] = {}


class ShapeError(ValueError):
    """A shape that cannot be used; the message names it."""


def register_shape(shape: TaskShape) -> TaskShape:
    """Add ``shape`` (called once by the module that defines it)."""
    known = _registry.get(shape.name)
    if known is not None and known != shape:
        raise ShapeError(f"task shape {shape.name!r} is registered twice")
    _registry[shape.name] = shape
    return shape


def unregister_shape(name: str) -> None:
    """Forget shape ``name`` (a test's own, once it is done); the built-in ones stay."""
    if name not in BUILT_IN:
        _registry.pop(name, None)


def shape_named(name: str) -> TaskShape:
    try:
        return _registry[name]
    except KeyError:
        raise ShapeError(f"unknown task shape {name!r} (known: {sorted(_registry)})") from None


def shape_of(problem: Problem) -> TaskShape:
    try:
        return shape_named(problem.shape)
    except ShapeError as exc:
        raise ShapeError(f"{problem.task_id}: {exc}") from None


def shapes_in(problems: Iterable[Problem]) -> list[TaskShape]:
    """The shapes of ``problems``, each once, in the order first met."""
    return list({p.shape: shape_of(p) for p in problems}.values())


def file_shape(text: str) -> TaskShape | None:
    """The shape whose own task file format ``text`` is (None: the JSONL task file)."""
    return next((s for s in _registry.values() if s.claims_file and s.claims_file(text)), None)


def package_set_of(problems: Iterable[Problem]) -> TaskShape | None:
    """The shape among ``problems``' whose tests need a sandbox package set (None: none)."""
    return next((s for s in shapes_in(problems) if s.package_set), None)


# The registration: one line per built-in shape.
BUILT_IN = tuple(register_shape(s).name for s in (FUNCTION_SHAPE, CLASSEVAL_SHAPE, APPS_SHAPE))
