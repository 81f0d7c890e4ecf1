"""A request's artifacts and its report: ``RequestReport``, the one type of report.json, and
``write_report``, its one writer."""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from pathlib import Path

from codegen.agents.artifacts import write_artifact
from codegen.agents.llm import Usage
from codegen.agents.pick import Selection
from codegen.agents.records import Round
from codegen.agents.report.grade import GRADE_NOTE, parse_grade
from codegen.agents.report.shown import counted
from codegen.agents.spec import MethodResult, method_results, module_outline, name_warnings
from codegen.agents.state import CrewState, HumanVerdict
from codegen.agents.types import Status
from codegen.json_types import JSONObject, JSONValue
from codegen.retrieval.grounding import Grounding
from codegen.sandbox.image import PackageSet

REPORT_FILE = "report.json"


class BadReport(ValueError):
    """A report.json that cannot be read: the one-line reason."""


@dataclass(frozen=True)
class Verification:
    """The blocking check's re-run of the stored tests against the stored code."""

    passed: bool
    tests_passed: int
    tests_total: int
    # ``TestReport.time_limit_note``: the re-run was stopped by the time limit, at what load.
    time_limit: str = ""

    def to_dict(self) -> JSONObject:
        out: JSONObject = {
            "passed": self.passed,
            "tests_passed": self.tests_passed,
            "tests_total": self.tests_total,
        }
        if self.time_limit:
            out["time_limit"] = self.time_limit
        return out

    @classmethod
    def from_dict(cls, data: JSONObject) -> Verification:
        return cls(
            passed=data.get("passed") is True,
            tests_passed=_int(data.get("tests_passed")),
            tests_total=_int(data.get("tests_total")),
            time_limit=_str(data.get("time_limit")),
        )


@dataclass(frozen=True)
class HumanReview:
    """Who signs off (``ReviewMode`` value) and every verdict a person gave so far."""

    mode: str = "agent"
    verdicts: list[HumanVerdict] = field(default_factory=list)

    def to_dict(self) -> JSONObject:
        return {"mode": self.mode, "verdicts": [v.to_dict() for v in self.verdicts]}


@dataclass(frozen=True)
class RequestReport:
    """report.json: how a request ended. Holds no settings and no secrets. Built from the
    request's state (``of``), saved atomically (``save``) and read back (``load``: keys it does
    not know are ignored, missing ones take their defaults)."""

    request_id: str
    status: Status
    reason: str
    rounds: int = 0
    tests_passed: int = 0
    tests_total: int = 0
    # The sandbox's test report as JSON (``TestReport.to_dict()``): only ever shown, never
    # read back into a TestReport.
    test_report: JSONObject | None = None
    review: str = ""
    history: list[Round] = field(default_factory=list)
    context: list[str] = field(default_factory=list)  # the retrieved chunks' citations
    # none | partial (with the fraction embedded) | full; None: not known.
    grounding: Grounding | None = None
    structured_outputs: str = ""
    candidates: Selection | None = None
    human_review: HumanReview = field(default_factory=HumanReview)
    artifacts: dict[str, str] = field(default_factory=dict)  # file name -> path
    usage: Usage = field(default_factory=Usage)
    # The base URL and model each role actually called (``Usage.endpoints_by_role``).
    endpoints: JSONObject = field(default_factory=dict)
    verification: Verification | None = None
    # What a person is shown of the module: the spec's outline (outline.module_outline: only
    # ever shown), the sandbox's package set it was checked against, the suite's results per
    # function and method, warnings when the request's names and the spec's disagree, and
    # the reviewer's grade (1-10, the reviewer model's opinion; None: no grade).
    module: JSONObject | None = None
    sandbox_packages: PackageSet | None = None
    methods: list[MethodResult] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    reviewer_grade: float | None = None

    @classmethod
    def of(cls, state: CrewState, folder: Path) -> RequestReport:
        outcome = state.outcome()
        report = outcome.test_report
        files = {
            "spec.json": outcome.spec is not None,
            "test_solution.py": bool(outcome.tests),
            "solution.py": bool(outcome.solution),
            "README.md": bool(outcome.docs),
            REPORT_FILE: True,  # this report: listed with the files it describes
        }
        return cls(
            request_id=state.request_id,
            status=outcome.status,
            reason=outcome.reason,
            rounds=outcome.rounds,
            tests_passed=report.passed if report else 0,
            tests_total=report.total if report else 0,
            test_report=report.to_dict() if report else None,
            review=outcome.review,
            history=list(outcome.history),
            context=[c.citation for c in outcome.context],
            grounding=state.context.grounding if state.context else None,
            structured_outputs=outcome.structured_outputs,
            candidates=state.solution.selection if state.solution else None,
            human_review=HumanReview(
                mode=state.review.mode if state.review else state.options.review,
                verdicts=list(state.review.verdicts) if state.review else [],
            ),
            artifacts={name: str(folder / name) for name, ok in files.items() if ok},
            usage=outcome.usage,
            endpoints=outcome.usage.endpoints_by_role(),
            module=module_outline(outcome.spec) if outcome.spec else None,
            sandbox_packages=state.spec.packages if state.spec else None,
            methods=method_results(outcome.spec, outcome.tests, report) if outcome.spec else [],
            # off_target's reason already names what was asked and what the spec defines.
            warnings=name_warnings(state.request, outcome.spec)
            if outcome.spec and outcome.status is not Status.OFF_TARGET
            else [],
            reviewer_grade=parse_grade(outcome.review),
        )

    def verified(self, verification: Verification) -> RequestReport:
        """This report with the blocking check's note; a 'passed' request whose re-run failed
        is not passed."""
        if verification.passed or self.status is not Status.PASSED:
            return replace(self, verification=verification)
        return replace(
            self,
            verification=verification,
            status=Status.FAILED_TESTS,
            reason=f"the verification re-run failed: {verification.tests_passed} of "
            f"{counted(verification.tests_total, 'test')} passed"
            + (f"; {verification.time_limit}" if verification.time_limit else ""),
        )

    def to_dict(self) -> JSONObject:
        out: JSONObject = {
            "request_id": self.request_id,
            "status": self.status.value,
            "reason": self.reason,
            "rounds": self.rounds,
            "tests_passed": self.tests_passed,
            "tests_total": self.tests_total,
            "test_report": self.test_report,
            "review": self.review,
            "history": [r.to_dict() for r in self.history],
            "context": list[JSONValue](self.context),
            "grounding": self.grounding.to_dict() if self.grounding else None,
            "structured_outputs": self.structured_outputs,
            "candidates": self.candidates.to_dict() if self.candidates else None,
            "human_review": self.human_review.to_dict(),
            "artifacts": dict[str, JSONValue](self.artifacts),
            "usage": self.usage.to_dict(),
            "endpoints": self.endpoints,
            "module": self.module,
            "sandbox_packages": _package_set_json(self.sandbox_packages),
            "methods": [m.to_dict() for m in self.methods],
            "warnings": list[JSONValue](self.warnings),
            # null: the agent never reviewed the code; a null grade: its reply gave none.
            "reviewer_grade": {"grade": self.reviewer_grade, "out_of": 10, "note": GRADE_NOTE}
            if self.review
            else None,
        }
        if self.verification is not None:
            out["verification"] = self.verification.to_dict()
        return out

    @classmethod
    def from_dict(cls, data: JSONObject) -> RequestReport:
        status = data.get("status")
        try:
            ended = Status(status)
        except ValueError:
            raise BadReport(f"report.json: unknown status {status!r}") from None
        test_report = data.get("test_report")
        grounding = data.get("grounding")
        candidates = data.get("candidates")
        human = _object(data.get("human_review"))
        verification = data.get("verification")
        usage = data.get("usage")
        module, packages = data.get("module"), data.get("sandbox_packages")
        grade = _object(data.get("reviewer_grade")).get("grade")
        return cls(
            request_id=_str(data.get("request_id")),
            status=ended,
            reason=_str(data.get("reason")),
            rounds=_int(data.get("rounds")),
            tests_passed=_int(data.get("tests_passed")),
            tests_total=_int(data.get("tests_total")),
            test_report=test_report if isinstance(test_report, dict) else None,
            review=_str(data.get("review")),
            history=[Round.from_dict(r) for r in _objects(data.get("history"))],
            context=[c for c in _list(data.get("context")) if isinstance(c, str)],
            grounding=grounding_from_json(grounding) if isinstance(grounding, dict) else None,
            structured_outputs=_str(data.get("structured_outputs")),
            candidates=Selection.from_dict(candidates) if isinstance(candidates, dict) else None,
            human_review=HumanReview(
                mode=_str(human.get("mode")) or "agent",
                verdicts=[HumanVerdict.from_dict(v) for v in _objects(human.get("verdicts"))],
            ),
            artifacts={
                k: v for k, v in _object(data.get("artifacts")).items() if isinstance(v, str)
            },
            usage=_usage(usage) if isinstance(usage, dict) else Usage(),
            endpoints=_object(data.get("endpoints")),
            verification=(
                Verification.from_dict(verification) if isinstance(verification, dict) else None
            ),
            module=module if isinstance(module, dict) else None,
            sandbox_packages=_package_set(packages) if isinstance(packages, dict) else None,
            methods=[MethodResult.from_dict(m) for m in _objects(data.get("methods"))],
            warnings=[w for w in _list(data.get("warnings")) if isinstance(w, str)],
            reviewer_grade=float(grade)
            if isinstance(grade, int | float) and not isinstance(grade, bool)
            else None,
        )

    def save(self, folder: Path) -> Path:
        return write_artifact(folder, REPORT_FILE, self.to_dict())

    @classmethod
    def load(cls, folder: Path) -> RequestReport | None:
        """The folder's report.json; None when there is none yet; BadReport when unreadable."""
        path = folder / REPORT_FILE
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            raise BadReport(f"{path}: not readable JSON ({exc})") from None
        if not isinstance(data, dict):
            raise BadReport(f"{path}: not a JSON object")
        return cls.from_dict(data)


def _int(value: JSONValue) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _str(value: JSONValue) -> str:
    return value if isinstance(value, str) else ""


def _list(value: JSONValue) -> list[JSONValue]:
    return value if isinstance(value, list) else []


def _object(value: JSONValue) -> JSONObject:
    return value if isinstance(value, dict) else {}


def _objects(value: JSONValue) -> list[JSONObject]:
    return [v for v in _list(value) if isinstance(v, dict)]


def _package_set_json(packages: PackageSet | None) -> JSONValue:
    if packages is None:
        return None
    return {"name": packages.name, "requirements": list[JSONValue](packages.requirements)}


def _package_set(data: JSONObject) -> PackageSet:
    listed = [r for r in _list(data.get("requirements")) if isinstance(r, str)]
    return PackageSet(_str(data.get("name")), tuple(listed))


def grounding_from_json(data: JSONObject) -> Grounding:
    """A report's grounding note, read back (missing fields: their zero)."""
    fraction = data.get("embedded_fraction")
    corpus = data.get("corpus_chunks")
    return Grounding(
        status=_str(data.get("status")),
        chunks=_int(data.get("chunks")),
        embedded_fraction=float(fraction) if isinstance(fraction, int | float) else 0.0,
        corpus_chunks=corpus if isinstance(corpus, int) else None,
        building=data.get("building") is True,
    )


def _usage(data: JSONObject) -> Usage:
    try:
        return Usage.from_dict(data)
    except TypeError as exc:  # a key this version's Usage does not have
        raise BadReport(f"report.json: unreadable usage ({exc})") from None


def store_artifacts(folder: Path, name: str, state: CrewState) -> None:
    """The files a finished step adds to the request's folder (never partial: atomic)."""
    if name == "spec" and state.spec is not None and state.spec.spec is not None:
        write_artifact(folder, "spec.json", state.spec.spec.model_dump(mode="json"))
    elif name == "tests" and state.tests is not None and state.tests.tests:
        write_artifact(folder, "test_solution.py", state.tests.tests)
    elif name == "solution" and state.solution is not None:
        original = state.tests.tests if state.tests is not None else ""
        if state.solution.tests and state.solution.tests != original:
            # Suspect tests were left out: the stored suite is the one the code was held to.
            write_artifact(folder, "test_solution.py", state.solution.tests)
        if state.solution.code:
            write_artifact(folder, "solution.py", state.solution.code)
        write_report(folder, state)
    elif name == "review" and state.review is not None:
        if state.review.revised is not None and state.review.revised.code:
            write_artifact(folder, "solution.py", state.review.revised.code)
        write_report(folder, state)
    elif name == "docs" and state.docs is not None:
        if state.docs.docs:
            write_artifact(folder, "README.md", state.docs.docs)
        write_report(folder, state)


def write_report(
    folder: Path, state: CrewState | None = None, verification: Verification | None = None
) -> RequestReport | None:
    """The one writer of report.json: the state's report (or the stored one), keeping the
    stored verification note unless a new one is given. None: nothing to write yet."""
    try:
        stored = RequestReport.load(folder)
    except BadReport:
        if state is None:
            raise
        stored = None  # the state's report replaces an unreadable one
    report = RequestReport.of(state, folder) if state is not None else stored
    if report is None:
        return None
    note = verification or (stored.verification if stored is not None else None)
    if note is not None:
        report = report.verified(note)
    report.save(folder)
    return report
