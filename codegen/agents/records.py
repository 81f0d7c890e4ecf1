"""Typed records of a request's results beside the pick's (``agents.pick.records``):
retrieved chunks and refinement rounds. Each has ``to_dict`` (and ``from_dict`` where
report.json is read back) for the JSON edge; inside the crew they stay records."""

from __future__ import annotations

from dataclasses import dataclass

from codegen.json_types import JSONObject, JSONValue


def _int(value: JSONValue, default: int = 0) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


@dataclass(frozen=True)
class ContextChunk:
    """One retrieved chunk as the programmer is shown it, with its citation."""

    citation: str
    uri: str
    source: str
    score: float
    tokens: int
    text: str

    def to_dict(self) -> JSONObject:
        return {
            "citation": self.citation,
            "uri": self.uri,
            "source": self.source,
            "score": self.score,
            "tokens": self.tokens,
            "text": self.text,
        }


@dataclass
class Round:
    """One refinement round: a format problem, or the test results and (once they pass) the
    reviewer's verdict; ``feedback`` is what the programmer was told next. Unset: absent."""

    round: int
    problem: str | None = None
    passed: int | None = None
    total: int | None = None
    verdict: str | None = None  # APPROVED | REJECTED
    feedback: str | None = None

    def to_dict(self) -> JSONObject:
        out: JSONObject = {"round": self.round}
        for key in ("problem", "passed", "total", "feedback", "verdict"):
            value = getattr(self, key)
            if value is not None:
                out[key] = value
        return out

    @classmethod
    def from_dict(cls, data: JSONObject) -> Round:
        def opt_str(key: str) -> str | None:
            value = data.get(key)
            return value if isinstance(value, str) else None

        def opt_int(key: str) -> int | None:
            value = data.get(key)
            return value if isinstance(value, int) and not isinstance(value, bool) else None

        return cls(
            round=_int(data.get("round")),
            problem=opt_str("problem"),
            passed=opt_int("passed"),
            total=opt_int("total"),
            verdict=opt_str("verdict"),
            feedback=opt_str("feedback"),
        )
