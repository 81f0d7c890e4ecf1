"""How a settings problem is put into words: the key as the docs write it (``[llm] max_rounds``),
why in the validator's own words, the nearest valid name for a typo; never the value given (it may
be a key pasted into the wrong place)."""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable

from pydantic import ValidationError


def reason(msg: str) -> str:
    """pydantic's message without its ``Value error, `` prefix: our validators' own words."""
    return msg.removeprefix("Value error, ")


def nearest(name: str, known: Iterable[str], *, quote: Callable[[str], str] = repr) -> str:
    """``did you mean 'x'?`` for the closest known name, else the known names."""
    names = list(known)
    close = difflib.get_close_matches(name, names, n=1, cutoff=0.6)
    if close:
        return f"did you mean {quote(close[0])}?"
    return "known: " + ", ".join(names)


def label(loc: tuple[str | int, ...]) -> str:
    """A key as the docs write it: ``[llm] max_rounds``, ``[llm.default] model``, ``env``."""
    names: list[str] = []
    for part in loc:
        if isinstance(part, int) and names:
            names[-1] += f"[{part}]"
        else:
            names.append(str(part))
    *table, key = names
    return f"[{'.'.join(table)}] {key}" if table else key


def describe(exc: ValidationError) -> str:
    """A validation error as one line: each bad key and why, without the value given."""
    out = []
    for e in exc.errors():
        why = "unknown key" if e["type"] == "extra_forbidden" else reason(e["msg"])
        out.append(
            f"{label(e['loc'])}{why}" if why.startswith("[") else f"{label(e['loc'])}: {why}"
        )
    return "; ".join(out)
