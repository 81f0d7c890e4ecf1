"""Shared inputs for programs: input streams every draft of a task runs on.

First the spec's worked examples (stdin and arguments), as given; then bounded,
deterministic mutations of their stdin that keep the stated input format. Only mutations
whose validity follows from the example's own structure are made; anything else is left as
it was (a mutation that cannot be shown valid is not made):

* a **list line**: two or more integers whose count is stated by exactly one integer on an
  earlier line (``3`` then ``5 1 4``), in a stream where no other line has that many tokens
  (a grid's row is not a list of its own). An element moves by at most ``MAX_STEP`` within
  the list's own smallest and largest value; the list is reordered; an element is dropped or
  repeated with its count changed to match. Every property the list had stays true after the
  change (all distinct, sorted either way), a count stays within the bounds the format states
  for any one-letter variable (``1 ≤ n ≤ 100``: conservative, every stated bound applies),
  no count changes where the format speaks of parity or divisibility (``n is odd``), and a
  format that says ``permutation`` keeps its values;
* **record lines**: an integer alone in its line's role as the number of lines after it
  (``2`` then two lines of equal shape, to the end of the stream): a record is dropped with
  the count kept consistent, or the records reordered;
* **a word**: a line holding one token of letters only has two of its characters swapped
  (same length, same alphabet), unless the format speaks of palindromes, brackets or order;
* **a literal list** of integers on a line (``[1, 3, 2]``: a function's argument fed on
  stdin): a value moved as in a list line, or the list reordered; its length is kept.

Reordering of any kind is left out when the format speaks of order (``sorted``,
``increasing``, ``in the order``...). Lines no mutation changed keep their spacing. Programs
that read files, float tokens and scalar integers (``a b``: their ranges are the format's,
which is prose) are not mutated.

Bounded: at most ``StreamBudget.max_mutations`` mutations, none from an example whose stdin
is over ``max_chars``; deterministic for one task (a ``random.Random`` seeded by the
program's name and examples, no clock). Nothing here executes model-written code.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import Literal

from codegen.agents.spec import ProgramSpec

MAX_STEP = 2  # how far a mutated integer moves
SHOWN_CHARS = 200  # of a stream's stdin, in a pick's record

StreamOrigin = Literal["example", "mutation"]


@dataclass(frozen=True)
class StreamBudget:
    max_mutations: int = 12
    max_chars: int = 4000  # stdin of an example that is mutated
    attempts: int = 60  # mutation tries in all before giving up


@dataclass(frozen=True)
class StreamInput:
    """One run's input: the stdin text, the arguments, and where it came from."""

    stdin: str
    arguments: tuple[str, ...]
    origin: StreamOrigin

    def shown(self, limit: int = SHOWN_CHARS) -> str:
        """The input as a record shows it: the arguments, then the stdin, cut."""
        text = self.stdin if len(self.stdin) <= limit else self.stdin[: limit - 3] + "..."
        args = " ".join(self.arguments)
        return f"[{args}] {text}" if args else text


_ORDER_WORDS = re.compile(
    r"\b(sorted|increasing|decreasing|ascending|descending|non-?decreasing|non-?increasing"
    r"|in (?:the )?order|chronological|order of)\b",
    re.IGNORECASE,
)
_WORD_SHAPE = re.compile(r"\b(palindrom\w*|brackets?|parenthes\w*|balanced|sorted)\b", re.I)
_PERMUTATION = re.compile(r"\bpermutation", re.IGNORECASE)
# A count the format constrains beyond a range (``n is odd``) keeps its value.
_COUNT_SHAPE = re.compile(r"\b(odd|even|divisible|multiple of|power of)\b", re.IGNORECASE)
# Records that make up a whole (a connected graph, a tree) lose it when one is dropped.
_WHOLE = re.compile(r"\b(connected|tree|graph|edges?|path|cycle)\b", re.IGNORECASE)
_LE = r"(?:≤|<=|\\le(?:q)?|=<)"
_LOW = re.compile(rf"(-?\d+)\s*{_LE}\s*[A-Za-z](?:_\w+)?\b")
# ``100``, ``10^5``, ``10**5``, ``2 · 10^5``, ``2*10^{5}``
_HIGH = re.compile(
    rf"\b[A-Za-z](?:_\w+)?\s*{_LE}\s*(\d+)"
    r"(?:\s*(?:·|⋅|\*|×|\\cdot)\s*(\d+))?(?:\s*(?:\^|\*\*)\s*\{?(\d+)\}?)?"
)


def _high(match: re.Match[str]) -> int:
    """The bound a ``_HIGH`` match states: ``a``, ``a^e`` or ``a · b^e``."""
    a, b, e = match.group(1), match.group(2), match.group(3)
    power = min(int(e or 1), 18)  # past 10^18 every count in an example is far below it
    if b is not None:
        return int(a) * int(b) ** power
    return int(a) ** power


@dataclass(frozen=True)
class _Format:
    """What the format's prose allows: reordering, word edits, value changes, count range."""

    reorder: bool
    words: bool
    values: bool
    drop_records: bool
    recount: bool
    low: int
    high: int | None

    @classmethod
    def of(cls, text: str) -> _Format:
        lows = [int(m.group(1)) for m in _LOW.finditer(text)]
        highs = [_high(m) for m in _HIGH.finditer(text)]
        return cls(
            reorder=not _ORDER_WORDS.search(text),
            words=not (_WORD_SHAPE.search(text) or _ORDER_WORDS.search(text)),
            values=not _PERMUTATION.search(text),
            drop_records=not _WHOLE.search(text),
            recount=not _COUNT_SHAPE.search(text),
            # a count never goes below 1, nor below (above) any bound the format states
            low=max([1, *lows]),
            high=min(highs) if highs else None,
        )

    def count_ok(self, count: int) -> bool:
        return self.recount and count >= self.low and (self.high is None or count <= self.high)


def _int(token: str) -> int | None:
    return int(token) if re.fullmatch(r"-?\d+", token) else None


@dataclass
class _Stream:
    """An example's stdin as lines of tokens, with what was found of its structure; a line
    no mutation changed is written back as it was (its spacing may matter)."""

    lines: list[list[str]]
    trailing_newline: bool
    raw: dict[tuple[str, ...], str]

    @classmethod
    def of(cls, text: str) -> _Stream:
        body = text[:-1] if text.endswith("\n") else text
        raw: dict[tuple[str, ...], str] = {}
        for line in body.split("\n"):
            raw.setdefault(tuple(line.split()), line)
        return cls([line.split() for line in body.split("\n")], text.endswith("\n"), raw)

    def text(self) -> str:
        lines = (self.raw.get(tuple(t), " ".join(t)) for t in self.lines)
        return "\n".join(lines) + ("\n" if self.trailing_newline else "")

    def count_of(self, line: int) -> tuple[int, int] | None:
        """The one (line, position) on an earlier line whose integer is this line's token
        count, when exactly one is and no other line has as many tokens."""
        size = len(self.lines[line])
        if sum(len(t) == size for t in self.lines) != 1:
            return None
        found = [
            (i, j)
            for i in range(line)
            for j, token in enumerate(self.lines[i])
            if _int(token) == size
        ]
        return found[0] if len(found) == 1 else None

    def records(self) -> tuple[int, int] | None:
        """The line holding a count of the lines after it (all of equal shape, to the end),
        as (line, position), when exactly one token of the stream says so."""
        found = []
        for i, tokens in enumerate(self.lines):
            after = self.lines[i + 1 :]
            if len(after) < 2 or len({len(t) for t in after}) != 1 or not after[0]:
                continue
            found += [(i, j) for j, t in enumerate(tokens) if _int(t) == len(after)]
        if len(found) > 1:  # ``3`` alone on its line, then ``1 2``...: the lone one counts
            found = [(i, j) for i, j in found if len(self.lines[i]) == 1]
        return found[0] if len(found) == 1 else None


def _shape(values: Sequence[int]) -> tuple[bool, bool, bool]:
    pairs = list(pairwise(values))
    return (
        len(set(values)) == len(values),
        all(a <= b for a, b in pairs),
        all(a >= b for a, b in pairs),
    )


def _keeps_shape(before: Sequence[int], after: Sequence[int]) -> bool:
    """Every property ``before`` had (distinct, sorted up, sorted down) ``after`` has too."""
    return all(a <= b for a, b in zip(_shape(before), _shape(after), strict=True))


def _list_mutation(stream: _Stream, fmt: _Format, rng: random.Random) -> bool:
    """One change to a list line (and its count); False when none could be made."""
    lists = []
    for i, tokens in enumerate(stream.lines):
        values = [_int(t) for t in tokens]
        if len(tokens) >= 2 and all(v is not None for v in values):
            count = stream.count_of(i)
            if count is not None:
                lists.append((i, count, [v for v in values if v is not None]))
    if not lists:
        return False
    line, (ci, cj), values = rng.choice(lists)
    kinds = ["move", "drop", "repeat"] if fmt.values else []
    kinds += ["reorder"] if fmt.reorder else []
    if not kinds:
        return False
    kind = rng.choice(kinds)
    new = list(values)
    where = rng.randrange(len(new))
    if kind == "move":
        step = rng.choice([s for s in range(-MAX_STEP, MAX_STEP + 1) if s])
        new[where] = min(max(new[where] + step, min(values)), max(values))
    elif kind == "drop":
        del new[where]
    elif kind == "repeat":
        new.insert(where, new[where])
    else:
        rng.shuffle(new)
    if new == values or not _keeps_shape(values, new):
        return False
    if len(new) != len(values) and not (len(new) >= 2 and fmt.count_ok(len(new))):
        return False
    stream.lines[line] = [str(v) for v in new]
    stream.lines[ci][cj] = str(len(new))
    return True


def _record_mutation(stream: _Stream, fmt: _Format, rng: random.Random) -> bool:
    """A record dropped (its count kept consistent) or the records reordered."""
    found = stream.records()
    if found is None:
        return False
    ci, cj = found
    records = stream.lines[ci + 1 :]
    kinds = ["drop"] if fmt.drop_records and fmt.count_ok(len(records) - 1) else []
    kinds += ["reorder"] if fmt.reorder else []
    if not kinds:
        return False
    if rng.choice(kinds) == "drop":
        del records[rng.randrange(len(records))]
    else:
        before = list(records)
        rng.shuffle(records)
        if records == before:
            return False
    stream.lines[ci + 1 :] = records
    stream.lines[ci][cj] = str(len(records))
    return True


def _word_mutation(stream: _Stream, fmt: _Format, rng: random.Random) -> bool:
    """Two characters of a one-word line swapped."""
    words = [
        i
        for i, tokens in enumerate(stream.lines)
        if fmt.words and len(tokens) == 1 and tokens[0].isalpha() and len(set(tokens[0])) > 1
    ]
    if not words:
        return False
    line = rng.choice(words)
    chars = list(stream.lines[line][0])
    a, b = rng.sample(range(len(chars)), 2)
    if chars[a] == chars[b]:
        return False
    chars[a], chars[b] = chars[b], chars[a]
    stream.lines[line] = ["".join(chars)]
    return True


_LITERAL_LIST = re.compile(r"\[\s*-?\d+(?:\s*,\s*-?\d+)+\s*\]")


def _literal_list_mutation(stream: _Stream, fmt: _Format, rng: random.Random) -> bool:
    """A line that is a literal list of integers (``[1, 3, 2]``: a function's argument fed
    on stdin) with a value moved within the list's range or the list reordered; its length
    kept (nothing states the bounds of a length that no count gives)."""
    found = [i for i, t in enumerate(stream.lines) if _LITERAL_LIST.fullmatch(" ".join(t))]
    kinds = (["move"] if fmt.values else []) + (["reorder"] if fmt.reorder else [])
    if not found or not kinds:
        return False
    line = rng.choice(found)
    text = " ".join(stream.lines[line])
    values = [int(v) for v in re.findall(r"-?\d+", text)]
    new = list(values)
    if rng.choice(kinds) == "move":
        where = rng.randrange(len(new))
        step = rng.choice([s for s in range(-MAX_STEP, MAX_STEP + 1) if s])
        new[where] = min(max(new[where] + step, min(values)), max(values))
    else:
        rng.shuffle(new)
    if new == values or not _keeps_shape(values, new):
        return False
    separator = ", " if ", " in text else ","
    stream.lines[line] = ["[" + separator.join(map(str, new)) + "]"]
    return True


_MUTATIONS: tuple[Callable[[_Stream, _Format, random.Random], bool], ...] = (
    _list_mutation,
    _record_mutation,
    _word_mutation,
    _literal_list_mutation,
)


def mutated(text: str, fmt_text: str, rng: random.Random) -> str | None:
    """One mutation of the stdin ``text`` that keeps the format (``fmt_text``: the spec's
    input format), or None when the attempt found none. Whitespace inside a line is
    normalised to single spaces (what a reader of tokens sees the same)."""
    stream = _Stream.of(text)
    fmt = _Format.of(fmt_text)
    order = list(_MUTATIONS)
    rng.shuffle(order)
    for mutation in order:
        if mutation(stream, fmt, rng):
            return stream.text()
    return None


def _seed(program: ProgramSpec, salt: int) -> int:
    data = json.dumps([program.name, [e.model_dump() for e in program.examples], salt])
    return int.from_bytes(hashlib.sha256(data.encode("utf-8")).digest()[:8], "big")


def stream_inputs(
    program: ProgramSpec, budget: StreamBudget | None = None, salt: int = 0
) -> list[StreamInput]:
    """The worked examples' inputs, then up to ``budget.max_mutations`` distinct mutations of
    them (``mutated``), each from an example's stdin with its arguments kept; none for a
    program that reads files (its examples do not carry them)."""
    budget = budget or StreamBudget()
    inputs: list[StreamInput] = []
    seen: set[tuple[str, tuple[str, ...]]] = set()
    for example in program.examples:
        key = (example.stdin, tuple(example.arguments))
        if key not in seen:
            seen.add(key)
            inputs.append(StreamInput(example.stdin, key[1], "example"))
    sources = [i for i in inputs if i.stdin.strip() and len(i.stdin) <= budget.max_chars]
    if "files" in program.reads or "stdin" not in program.reads or not sources:
        return inputs
    rng = random.Random(_seed(program, salt))
    made: list[StreamInput] = []
    for attempt in range(budget.attempts):
        if len(made) >= budget.max_mutations:
            break
        # Every example in turn, and between them a mutation of a mutation (further from the
        # examples, each step keeping the format).
        turn = attempt // 2 % len(sources)
        base = sources[turn] if attempt % 2 == 0 or not made else rng.choice(made)
        text = mutated(base.stdin, program.input_format, rng)
        if text is None or (text, base.arguments) in seen:
            continue
        seen.add((text, base.arguments))
        made.append(StreamInput(text, base.arguments, "mutation"))
    return inputs + made
