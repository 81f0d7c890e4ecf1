"""Typed records of a pick: the selection of a draft, its groups, the shared inputs and their
outputs, each draft's run and the reliability its vote counted with. Each has ``to_dict`` (and
``from_dict`` where report.json is read back) for the JSON edge; inside the crew they stay
records."""

from __future__ import annotations

from dataclasses import dataclass, field

from codegen.json_types import JSONObject, JSONValue


def _int(value: JSONValue, default: int = 0) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def _float(value: JSONValue) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _opt_int(value: JSONValue) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _str(value: JSONValue) -> str:
    return value if isinstance(value, str) else ""


def _list(value: JSONValue) -> list[JSONValue]:
    return value if isinstance(value, list) else []


def _objects(value: JSONValue) -> list[JSONObject]:
    return [v for v in _list(value) if isinstance(v, dict)]


@dataclass(frozen=True)
class SelectionGroup:
    """Drafts that behave the same (same per-test outcomes; with output agreement also the
    same outputs on every shared input), and the group's score. ``weight`` (the members'
    weights: the share of valid inputs each returns a value on) and ``support`` (every
    eligible draft's weighted agreement with the group) are set by output agreement."""

    members: list[int]
    passes: int
    score: float
    weight: float | None = None
    support: float | None = None

    @property
    def size(self) -> int:
        return len(self.members)

    def to_dict(self) -> JSONObject:
        out: JSONObject = {
            "members": list(self.members),
            "size": self.size,
            "passes": self.passes,
            "score": self.score,
        }
        if self.weight is not None:
            out["weight"] = self.weight
        if self.support is not None:
            out["support"] = self.support
        return out

    @classmethod
    def from_dict(cls, data: JSONObject) -> SelectionGroup:
        members = [m for m in _list(data.get("members")) if isinstance(m, int)]
        return cls(
            members,
            _int(data.get("passes")),
            _float(data.get("score")) or 0.0,
            _float(data.get("weight")),
            _float(data.get("support")),
        )


@dataclass(frozen=True)
class SharedInput:
    """One input every draft was called on: its arguments (as Python source), where it
    came from (``example``, ``test`` or ``mutation``) and, per outcome class on it, what it
    was (``BehaviourTable.labels``: a returned value's repr, cut, or the exception's type)."""

    args: str
    origin: str
    outputs: dict[int, str] = field(default_factory=dict)

    def to_dict(self) -> JSONObject:
        out: JSONObject = {"args": self.args, "origin": self.origin}
        if self.outputs:
            out["outputs"] = {str(k): v for k, v in sorted(self.outputs.items())}
        return out

    @classmethod
    def from_dict(cls, data: JSONObject) -> SharedInput:
        raw = data.get("outputs")
        outputs: dict[int, str] = {}
        if isinstance(raw, dict):
            for key, value in raw.items():
                try:
                    outputs[int(key)] = _str(value)
                except ValueError:
                    continue
        return cls(_str(data.get("args")), _str(data.get("origin")), outputs)


@dataclass(frozen=True)
class SplitOutput:
    group: int  # index into Selection.groups
    output: str  # what its members returned (repr, cut), or the exception's type

    def to_dict(self) -> JSONObject:
        return {"group": self.group, "output": self.output}

    @classmethod
    def from_dict(cls, data: JSONObject) -> SplitOutput:
        return cls(_int(data.get("group")), _str(data.get("output")))


@dataclass(frozen=True)
class SplittingInput:
    """An input on which the leading groups returned different outputs."""

    input: int  # index into Selection.inputs
    outputs: list[SplitOutput]

    def to_dict(self) -> JSONObject:
        return {"input": self.input, "outputs": [o.to_dict() for o in self.outputs]}

    @classmethod
    def from_dict(cls, data: JSONObject) -> SplittingInput:
        outputs = [SplitOutput.from_dict(o) for o in _objects(data.get("outputs"))]
        return cls(_int(data.get("input")), outputs)


@dataclass(frozen=True)
class CandidateRun:
    """One draft against the suite plus the spec's examples, and what it cost."""

    candidate: int
    problem: str
    passed: int
    total: int
    outcomes: dict[str, bool]  # test name -> passed
    tokens: int
    cost_usd: float | None
    # Output agreement's verdicts: worked examples passed, the group it is in (index into
    # Selection.groups; -1: not eligible), valid shared inputs it raised or hung on, its weight.
    examples_passed: int | None = None
    group: int | None = None
    crashes: int | None = None
    weight: float | None = None
    # Its behaviour table row: per shared input (Selection.inputs), the class of its outcome
    # (``agents.pick.behaviour``: >= 0 a value, -1 an exception, -2 a timeout, -4 never run), so a
    # pick can be decided again from the record alone (``agents.pick.decision``).
    classes: list[int] | None = None
    # How like the other drafts its code is (``agents.pick.typical``): the tie-break inside
    # its behaviour group.
    typicality: float | None = None

    def to_dict(self) -> JSONObject:
        out: JSONObject = {
            "candidate": self.candidate,
            "problem": self.problem,
            "passed": self.passed,
            "total": self.total,
            "outcomes": dict[str, JSONValue](self.outcomes),
            "tokens": self.tokens,
            "cost_usd": self.cost_usd,
        }
        for key in ("examples_passed", "group", "crashes", "weight", "typicality"):
            value = getattr(self, key)
            if value is not None:
                out[key] = value
        if self.classes is not None:
            out["classes"] = list[JSONValue](self.classes)
        return out

    @classmethod
    def from_dict(cls, data: JSONObject) -> CandidateRun:
        raw = data.get("outcomes")
        outcomes = (
            {k: v for k, v in raw.items() if isinstance(v, bool)} if isinstance(raw, dict) else {}
        )
        return cls(
            candidate=_int(data.get("candidate")),
            problem=_str(data.get("problem")),
            passed=_int(data.get("passed")),
            total=_int(data.get("total")),
            outcomes=outcomes,
            tokens=_int(data.get("tokens")),
            cost_usd=_float(data.get("cost_usd")),
            examples_passed=_opt_int(data.get("examples_passed")),
            group=_opt_int(data.get("group")),
            crashes=_opt_int(data.get("crashes")),
            weight=_float(data.get("weight")),
            typicality=_float(data.get("typicality")),
            classes=(
                [c for c in raw_classes if isinstance(c, int) and not isinstance(c, bool)]
                if isinstance(raw_classes := data.get("classes"), list)
                else None
            ),
        )


@dataclass(frozen=True)
class UsedReliability:
    """The reliability one draft's vote counted with in a pick: its model's source key
    (``agents.pick.reliability.source_key``: model @ endpoint), the value (None: none, the draft
    counts as today), where it came from (``config``, ``evaluation``: estimated over this
    evaluation's tasks, ``history``: over earlier evaluations and requests in this home, or
    ``none``), how many tasks an estimate rests on and, for an estimate, its interval
    (``low``/``high``: ``agents.pick.method_evidence``; the dominance rule reads them)."""

    candidate: int
    model: str
    value: float | None
    source: str
    tasks: int | None = None
    low: float | None = None
    high: float | None = None

    def to_dict(self) -> JSONObject:
        out: JSONObject = {
            "candidate": self.candidate,
            "model": self.model,
            "value": self.value,
            "source": self.source,
        }
        if self.tasks is not None:
            out["tasks"] = self.tasks
        if self.low is not None and self.high is not None:
            out["low"], out["high"] = self.low, self.high
        return out

    @classmethod
    def from_dict(cls, data: JSONObject) -> UsedReliability:
        return cls(
            candidate=_int(data.get("candidate")),
            model=_str(data.get("model")),
            value=_float(data.get("value")),
            source=_str(data.get("source")) or "none",
            tasks=_opt_int(data.get("tasks")),
            low=_float(data.get("low")),
            high=_float(data.get("high")),
        )


@dataclass(frozen=True)
class Selection:
    """How one draft was picked out of several (``agents.pick.matrix``): each draft's results,
    the groups, the suspect and trusted tests, and why the pick won."""

    chosen: int
    why: str
    rule: str = "examples_then_agreement"
    groups: list[SelectionGroup] = field(default_factory=list)
    suspect_tests: list[str] = field(default_factory=list)
    trusted_tests: list[str] = field(default_factory=list)
    candidates: list[CandidateRun] = field(default_factory=list)
    # Output agreement: the shared inputs, the ones that split the leading groups, and the
    # seconds of the one sandbox execution that ran every draft on them.
    inputs: list[SharedInput] = field(default_factory=list)
    splitting_inputs: list[SplittingInput] = field(default_factory=list)
    inputs_seconds: float | None = None
    # Programs (inputs are input streams): the time limit each run on them had
    inputs_time_limit_s: float | None = None
    # With a history: the worked examples outvoted (the drafts' posterior says wrong), which
    # filtered nothing
    outvoted_examples: list[str] = field(default_factory=list)
    # Per draft, the reliability its vote counted with and where that came from (the rule
    # that decided is ``rule``); empty in records stored before picks said so.
    reliabilities: list[UsedReliability] = field(default_factory=list)

    def to_dict(self) -> JSONObject:
        out: JSONObject = {
            "rule": self.rule,
            "chosen": self.chosen,
            "why": self.why,
            "groups": [g.to_dict() for g in self.groups],
            "suspect_tests": list[JSONValue](self.suspect_tests),
            "trusted_tests": list[JSONValue](self.trusted_tests),
            "candidates": [c.to_dict() for c in self.candidates],
        }
        if self.inputs:
            out["inputs"] = [i.to_dict() for i in self.inputs]
            out["splitting_inputs"] = [s.to_dict() for s in self.splitting_inputs]
            out["inputs_seconds"] = self.inputs_seconds
            if self.inputs_time_limit_s is not None:
                out["inputs_time_limit_s"] = self.inputs_time_limit_s
        if self.outvoted_examples:
            out["outvoted_examples"] = list[JSONValue](self.outvoted_examples)
        if self.reliabilities:
            out["reliabilities"] = [r.to_dict() for r in self.reliabilities]
        return out

    @classmethod
    def from_dict(cls, data: JSONObject) -> Selection:
        return cls(
            chosen=_int(data.get("chosen")),
            why=_str(data.get("why")),
            rule=_str(data.get("rule")) or "examples_then_agreement",
            groups=[SelectionGroup.from_dict(g) for g in _objects(data.get("groups"))],
            suspect_tests=[t for t in _list(data.get("suspect_tests")) if isinstance(t, str)],
            trusted_tests=[t for t in _list(data.get("trusted_tests")) if isinstance(t, str)],
            candidates=[CandidateRun.from_dict(c) for c in _objects(data.get("candidates"))],
            inputs=[SharedInput.from_dict(i) for i in _objects(data.get("inputs"))],
            splitting_inputs=[
                SplittingInput.from_dict(i) for i in _objects(data.get("splitting_inputs"))
            ],
            inputs_seconds=_float(data.get("inputs_seconds")),
            inputs_time_limit_s=_float(data.get("inputs_time_limit_s")),
            outvoted_examples=[
                t for t in _list(data.get("outvoted_examples")) if isinstance(t, str)
            ],
            reliabilities=[
                UsedReliability.from_dict(r) for r in _objects(data.get("reliabilities"))
            ],
        )
