"""How typical each draft's code is among the drafts of one task: the tie-break inside a
behaviour group.

Drafts in one group behave the same on every check and shared input we have, so those
checks cannot tell them apart; the hidden truth can. Minimum Bayes risk over code picks the
draft most like the others: sampled drafts scatter around what the model most believes, and
an odd one out is more often wrong (the medoid of the samples, as in MBR decoding, with code
overlap as the utility instead of execution, which is already spent). The utility is the
Jaccard overlap of token 4-gram multisets: cheap, defined on code that does not parse, and
blind to formatting.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

_TOKEN = re.compile(r"\w+|[^\w\s]")
_GRAM = 4


def _grams(code: str) -> Counter[tuple[str, ...]]:
    tokens = _TOKEN.findall(code)
    return Counter(tuple(tokens[i : i + _GRAM]) for i in range(len(tokens) - _GRAM + 1))


def _overlap(a: Counter[tuple[str, ...]], b: Counter[tuple[str, ...]]) -> float:
    union = sum((a | b).values())
    return sum((a & b).values()) / union if union else 0.0


def typicality(codes: Sequence[str]) -> list[float]:
    """Per draft, its mean overlap with every other draft (0 to 1; a lone draft or an empty
    one scores 0), rounded to 4 digits so a stored record decides the same again."""
    grams = [_grams(code) for code in codes]
    if len(grams) < 2:
        return [0.0 for _ in grams]
    return [
        round(
            sum(_overlap(own, other) for j, other in enumerate(grams) if j != i) / (len(grams) - 1),
            4,
        )
        for i, own in enumerate(grams)
    ]


def most_typical(
    members: Sequence[int],
    typical: Sequence[float],
    priors: Sequence[float] | None = None,
) -> int:
    """The member to pick from a group of equal behaviour: the most reliable (``priors``),
    then the most typical, then the earliest."""
    return min(
        members,
        key=lambda i: (-(priors[i] if priors is not None else 0.0), -typical[i], i),
    )
