"""ClassEval's figures from stored per-test-class results, as the authors compute them.

Following ``classeval_evaluation/test_pipeline.py`` (``evaluate``, ``cal_metrics_pass_at_k``):
per task, a sample counts for ``class_success`` when every test class succeeds and for
``class_partial_success`` when, besides, none fails or errors (so a class success counts
too); per test class, a sample counts for ``success`` when that class succeeds and for
``partial_success`` when at least one of its tests passes. pass@k (unbiased, from n samples)
is averaged over tasks for the class figures and over every test class of every task for the
authors' ``fun_success``/``fun_partial_success`` (reported as ``test_class_success``; the
class-level test class included, as in their table). ``method_success`` and
``method_partial_success`` are the same over the methods' own test classes only
(``methods_info[i].test_class``).
"""

from __future__ import annotations

from collections.abc import Sequence

from codegen.evaluation.classeval import tasks as classeval
from codegen.evaluation.classeval.scoring import (
    ERROR,
    PARTIAL,
    SCORING_VERSION,
    SUCCESS,
    score_classes,
)
from codegen.evaluation.humaneval import Problem
from codegen.evaluation.passk import mean_pass_at_k, reportable_ks
from codegen.evaluation.scoring import SampleScore
from codegen.evaluation.task_shape import TaskShape
from codegen.json_types import JSONObject

KS = (1, 3, 5)  # the authors' table: pass@1, pass@3, pass@5


def _results(problem: Problem, score: SampleScore) -> dict[str, str]:
    """Test class -> outcome for one sample (no per-class results: every class an error)."""
    assert problem.classeval is not None
    found = {str(r.get("test_class")): str(r.get("result")) for r in score.test_classes or []}
    return {name: found.get(name, ERROR) for name in problem.classeval.test_classes}


def _figures(counts: dict[str, list[tuple[int, int]]], ks: list[int]) -> JSONObject:
    return {
        name: {f"pass@{k}": round(mean_pass_at_k(pairs, k), 4) for k in ks} if pairs else {}
        for name, pairs in counts.items()
    }


def class_summary(scored: Sequence[tuple[Problem, Sequence[SampleScore]]]) -> JSONObject:
    """Class, test-class and method success (and partial) pass@k, the solved counts, how many
    verdicts were decided isolated and behind which fence, and every failing test class with
    its reason."""
    counts: dict[str, list[tuple[int, int]]] = {
        "class_success": [],
        "class_partial_success": [],
        "test_class_success": [],
        "test_class_partial_success": [],
        "method_success": [],
        "method_partial_success": [],
    }
    failures: list[JSONObject] = []
    isolated = verdicts = 0
    fences: dict[str, int] = {}
    for problem, scores in scored:
        assert problem.classeval is not None
        n = len(scores)
        if not n:
            continue
        per_sample = [_results(problem, s) for s in scores]
        full = sum(all(r == SUCCESS for r in res.values()) for res in per_sample)
        partial = sum(all(r in (SUCCESS, PARTIAL) for r in res.values()) for res in per_sample)
        counts["class_success"].append((n, full))
        counts["class_partial_success"].append((n, partial))
        methods = {test for _, test in problem.classeval.method_tests}
        for name in problem.classeval.test_classes:
            ok = sum(res[name] == SUCCESS for res in per_sample)
            some = sum(res[name] in (SUCCESS, PARTIAL) for res in per_sample)
            counts["test_class_success"].append((n, ok))
            counts["test_class_partial_success"].append((n, some))
            if name in methods:
                counts["method_success"].append((n, ok))
                counts["method_partial_success"].append((n, some))
        for index, score in enumerate(scores):
            for result in score.test_classes or []:
                verdicts += 1
                isolated += result.get("isolated") is True
                fence = str(result.get("fence") or "unknown")
                fences[fence] = fences.get(fence, 0) + 1
                if result.get("result") != SUCCESS:
                    failures.append({"task": problem.task_id, "sample": index, **result})
    ks = reportable_ks([n for n, _ in counts["class_success"]], KS)
    return {
        **_figures(counts, ks),
        "classes": len(counts["class_success"]),
        "classes_solved": sum(c > 0 for _, c in counts["class_success"]),
        "test_classes": len(counts["test_class_success"]),
        "methods": len(counts["method_success"]),
        "verdicts": verdicts,
        "verdicts_isolated": isolated,
        "verdicts_by_fence": fences,
        "failures": failures,
    }


FIGURES = (
    "class_success",
    "class_partial_success",
    "method_success",
    "method_partial_success",
    "test_class_success",
    "test_class_partial_success",
)
FAILURES_SHOWN = 10  # failing test classes printed (all of them for --canonical, and in --json)
METADATA_FAILURES = 50  # failing test classes the Dagster metadata lists


def describe(figures: JSONObject, every_failure: bool) -> list[str]:
    """ClassEval's figures as text; the failing test classes (all of them if
    ``every_failure``)."""
    lines = []
    for name in FIGURES:
        shown = ", ".join(f"{k} = {v:.4f}" for k, v in figures[name].items())  # type: ignore[union-attr]
        lines.append(f"{name.replace('_', ' ')}: {shown or 'n/a'}")
    fences = figures["verdicts_by_fence"]
    assert isinstance(fences, dict)
    behind = ", ".join(f"{fence} {count}" for fence, count in sorted(fences.items()))
    lines.append(
        f"classes solved {figures['classes_solved']}/{figures['classes']}; verdicts decided "
        f"isolated {figures['verdicts_isolated']}/{figures['verdicts']}; fence: {behind or 'n/a'}"
    )
    failures = figures["failures"]
    assert isinstance(failures, list)
    for failure in failures if every_failure else failures[:FAILURES_SHOWN]:
        assert isinstance(failure, dict)
        lines.append(
            f"  {failure['task']} #{failure['sample']} {failure['test_class']}: "
            f"{failure['result']}: {str(failure['reason'])[:200]}"
        )
    if len(failures) > FAILURES_SHOWN and not every_failure:
        more = len(failures) - FAILURES_SHOWN
        lines.append(f"  ... {more} more failing test classes (all in --json)")
    return lines


def metadata(figures: JSONObject) -> JSONObject:
    """The figures with the first failing test classes only (all of them are in --json)."""
    failures = figures["failures"]
    assert isinstance(failures, list)
    return {**figures, "failures": failures[:METADATA_FAILURES], "failures_total": len(failures)}


def _is_replies_file(text: str) -> bool:
    return text.lstrip().startswith("[")  # the authors' replies: [{task_id, predict: [...]}]


CLASSEVAL_SHAPE = TaskShape(
    name=classeval.SHAPE,
    title=classeval.NAME,
    claims_file=classeval.is_task_list,
    read_file=classeval.parse_task_list,
    claims_replies=_is_replies_file,
    read_replies=classeval.replies_modules,
    score=score_classes,
    scoring_version=SCORING_VERSION,
    figures=class_summary,
    describe=describe,
    metadata=metadata,
    package_set="classeval",  # its tests import numpy, pandas, nltk, ...
)
