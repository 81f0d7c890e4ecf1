"""The scripted answer book, for tests, benchmarks and the README's offline mode.

The server is the project's one OpenAI-compatible server (``codegen.replay.openai_server``:
the real wire protocol over real sockets). Replies are chosen by the calling agent's
role, read from the ``X-Codegen-Agent`` header (see docs/architecture.md, "LLM endpoint"):

* per-role queues: ``script={"analyzer": [spec_dict], "programmer": ["```python ...```"]}``;
  each request pops the next reply of its role;
* a fallback callable ``handler(role, body) -> reply`` used when the role's queue is empty;
* with neither, the server answers HTTP 400 (not retried by the SDK) naming the role, so a
  test fails fast and loudly instead of hanging.

A reply is a ``str`` (assistant text), a ``dict``/``list`` (sent as JSON text, for Structured
Outputs), or a :class:`Reply` for full control: an HTTP error with status and headers
(``Reply.error(429, headers={"Retry-After": "0"})``), a delay before answering
(``Reply.text("...", delay_s=5)`` to provoke client timeouts), or explicit token usage.

The latest requests are recorded in ``server.requests`` (method, path, headers, JSON body,
role; at most ``codegen.replay.history.MAX_HISTORY_ITEMS`` of them, the oldest dropped first).

It plays the model it is asked for: a completion names the requested model, with
``system_fingerprint`` ``codegen-scripted`` (``codegen.agents.llm.wire.SCRIPTED_FINGERPRINT``), and
the crew labels and prices its replies as that model, so budgets and costs can be tested
offline. (A replay server says instead that no model was called: ``codegen.replay.server``.)

``structured_outputs`` picks how the server treats ``response_format`` (see ``REFUSALS``):
``"full"`` (default) accepts everything; ``"llama.cpp"``, ``"vllm-0.5"`` and ``"ollama-0.4"``
refuse or ignore ``json_schema`` with those servers' real error bodies; ``"none"`` refuses any
``response_format``.

Usage::

    with ScriptedOpenAIServer(script={...}) as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="test")

Run standalone (for manual acceptance runs of ``codegen generate``)::

    python -m codegen.replay.scripted --port 8765 --script primes

A canned script knows one request (``primes``: primes up to n; ``median``: a program printing
the median of numbers read from stdin). It answers any other request with that script too,
and says so: a line on stderr, and a note opening the spec's purpose
(the crew then ends the request ``off_target``, with the note in its reason).
"""

from __future__ import annotations

import argparse
import re
import sys
import threading
import time
from collections import defaultdict, deque
from collections.abc import Callable, Iterable

from codegen.agents.llm import SCRIPTED_FINGERPRINT
from codegen.json_types import JSONObject
from codegen.replay.openai_server import (
    Headers,
    OpenAICompatibleServer,
    RecordedRequest,
    Reply,
    as_reply,
    estimate_tokens,
)
from codegen.replay.server_profiles import REFUSALS, STRUCTURED_PROFILES
from codegen.replay.spec_json import SpecJSON

__all__ = [
    "REFUSALS",
    "STRUCTURED_PROFILES",
    "Headers",
    "RecordedRequest",
    "Reply",
    "ScriptedBook",
    "ScriptedOpenAIServer",
    "as_reply",
    "estimate_tokens",
    "median_handler",
    "primes_handler",
    "telling",
]

Handler = Callable[[str, JSONObject], object]


class ScriptedBook:
    """Replies per agent role: queued ones first, then the handler, else a loud HTTP 400."""

    def __init__(
        self,
        script: dict[str, Iterable[object]] | None = None,
        handler: Handler | None = None,
        models: Iterable[str] = ("gpt-4o-mini",),
    ) -> None:
        self._queues: dict[str, deque[object]] = defaultdict(deque)
        for role, replies in (script or {}).items():
            self._queues[role].extend(replies)
        self.handler = handler
        self.models = list(models)
        self._lock = threading.Lock()

    def model_ids(self) -> list[str]:
        return self.models

    def enqueue(self, role: str, *replies: object) -> None:
        with self._lock:
            self._queues[role].extend(replies)

    def pending(self, role: str | None = None) -> int:
        with self._lock:
            if role is not None:
                return len(self._queues[role])
            return sum(len(q) for q in self._queues.values())

    def answer(self, request: RecordedRequest) -> Reply:
        role = request.role or "unknown"
        with self._lock:
            queue = self._queues.get(role)
            if queue:
                return as_reply(queue.popleft())
        if self.handler is not None:
            return as_reply(self.handler(role, request.body or {}))
        return Reply.error(400, f"no scripted reply for role {role!r}")


class ScriptedOpenAIServer(OpenAICompatibleServer):
    """The OpenAI-compatible server over a :class:`ScriptedBook`."""

    book: ScriptedBook

    def __init__(
        self,
        script: dict[str, Iterable[object]] | None = None,
        handler: Handler | None = None,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        models: Iterable[str] = ("gpt-4o-mini",),
        structured_outputs: str = "full",
    ) -> None:
        super().__init__(
            ScriptedBook(script, handler, models),
            host=host,
            port=port,
            structured_outputs=structured_outputs,
            name="scripted",
            fingerprint=SCRIPTED_FINGERPRINT,
        )

    @property
    def handler(self) -> Handler | None:
        return self.book.handler

    @handler.setter
    def handler(self, value: Handler | None) -> None:
        self.book.handler = value

    @property
    def models(self) -> list[str]:
        return self.book.models

    def enqueue(self, role: str, *replies: object) -> None:
        self.book.enqueue(role, *replies)

    def pending(self, role: str | None = None) -> int:
        return self.book.pending(role)


# -- canned scripts ------------------------------------------------------------------------
PRIMES_SPEC: SpecJSON = {
    "purpose": "Return all prime numbers less than or equal to n using the Sieve of Eratosthenes.",
    "functions": [
        {
            "name": "primes_up_to",
            "signature": "def primes_up_to(n: int) -> list[int]",
            "description": "All primes p with 2 <= p <= n, in increasing order.",
        }
    ],
    "behaviours": [
        "returns primes in increasing order",
        "includes n itself when n is prime",
    ],
    "edge_cases": ["n < 2 returns an empty list", "n = 2 returns [2]"],
    "examples": [
        {"call": "primes_up_to(10)", "expected": "[2, 3, 5, 7]"},
        {"call": "primes_up_to(1)", "expected": "[]"},
        {"call": "primes_up_to(2)", "expected": "[2]"},
    ],
    "constraints": ["use the Sieve of Eratosthenes", "standard library only"],
}

PRIMES_TESTS = """```python
from solution import primes_up_to


def test_small():
    assert primes_up_to(10) == [2, 3, 5, 7]


def test_below_two():
    assert primes_up_to(1) == []
    assert primes_up_to(0) == []


def test_two():
    assert primes_up_to(2) == [2]


def test_prime_bound_included():
    assert primes_up_to(13)[-1] == 13


def test_count_to_100():
    assert len(primes_up_to(100)) == 25
```"""

PRIMES_SOLUTION = '''```python
"""Primes by the Sieve of Eratosthenes."""


def primes_up_to(n: int) -> list[int]:
    """Return all primes <= n in increasing order."""
    if n < 2:
        return []
    sieve = bytearray([1]) * (n + 1)
    sieve[0] = sieve[1] = 0
    for p in range(2, int(n**0.5) + 1):
        if sieve[p]:
            sieve[p * p :: p] = bytearray(len(range(p * p, n + 1, p)))
    return [i for i, flag in enumerate(sieve) if flag]
```'''

# Off by one: drops n when n is prime, so test_two and test_prime_bound_included fail.
PRIMES_BUGGY_SOLUTION = PRIMES_SOLUTION.replace(
    "sieve = bytearray([1]) * (n + 1)", "sieve = bytearray([1]) * n"
).replace(
    "sieve[p * p :: p] = bytearray(len(range(p * p, n + 1, p)))",
    "sieve[p * p :: p] = bytearray(len(range(p * p, n, p)))",
)

PRIMES_DOCS = """# primes_up_to

Return every prime number up to and including `n`, computed with the Sieve of Eratosthenes.

## Usage

```python
from solution import primes_up_to

primes_up_to(10)  # [2, 3, 5, 7]
```

## API reference

### `primes_up_to(n: int) -> list[int]`

All primes `p` with `2 <= p <= n`, in increasing order; an empty list when `n < 2`.
"""


def primes_handler(role: str, body: JSONObject) -> object:
    """Answers every role with a correct primes_up_to solution (instantly, any number of times)."""
    return {
        "analyzer": PRIMES_SPEC,
        "test_designer": PRIMES_TESTS,
        "programmer": PRIMES_SOLUTION,
        "reviewer": "APPROVED\nThe code follows the spec and uses the sieve.",
        "documenter": PRIMES_DOCS,
    }.get(role, Reply.error(400, f"unknown role {role!r}"))


MEDIAN_SPEC: SpecJSON = {
    "purpose": "A program that reads n and then n whole numbers from standard input and prints "
    "their median.",
    "functions": [],
    "program": {
        "name": "median",
        "usage": "median < numbers.txt",
        "reads": ["stdin"],
        "writes": ["stdout"],
        "input_format": "line 1: n (1 <= n <= 100000); then n integers separated by spaces "
        "or newlines",
        "output_format": "one line: the median; a whole median as an integer (2), else with "
        "its half (2.5)",
        "comparison": "trailing_whitespace",
        "examples": [
            {"stdin": "3\n1 3 2\n", "arguments": [], "stdout": "2\n", "exit_code": 0},
            {"stdin": "4\n4 1 3 2\n", "arguments": [], "stdout": "2.5\n", "exit_code": 0},
        ],
    },
    "behaviours": [
        "an odd count prints the middle value of the sorted numbers",
        "an even count prints the mean of the two middle values",
    ],
    "edge_cases": ["n = 1 prints that number", "the numbers may span several lines"],
    "examples": [],
    "constraints": ["standard library only"],
}

MEDIAN_TESTS = """```python
def test_odd_count(program):
    program.check(stdin="3\\n1 3 2\\n", stdout="2\\n")


def test_even_count_prints_the_mean(program):
    program.check(stdin="4\\n4 1 3 2\\n", stdout="2.5\\n")


def test_numbers_over_several_lines(program):
    program.check(stdin="5\\n9 7\\n5\\n3 1\\n", stdout="5\\n")


def test_one_number(program):
    program.check(stdin="1\\n-4\\n", stdout="-4\\n")


def test_whole_mean_of_negatives(program):
    run = program.run(stdin="4\\n-1 -1 3 3\\n")
    assert run.exit_code == 0 and run.stdout.split() == ["1"]
```"""

# As real models write stdin/stdout programs: a bare script, no function, no fence.
MEDIAN_SOLUTION = """Here is the program:

import sys

tokens = sys.stdin.read().split()
n = int(tokens[0])
values = sorted(int(t) for t in tokens[1 : n + 1])
middle = n // 2
if n % 2:
    print(values[middle])
else:
    total = values[middle - 1] + values[middle]
    print(total // 2 if total % 2 == 0 else total / 2)
"""

MEDIAN_DOCS = """# median

Prints the median of the numbers it reads from standard input.

## Usage

    median < numbers.txt

Input: `n` on the first line, then `n` integers.

    $ printf '4\\n4 1 3 2\\n' | python3 solution.py
    2.5
"""


def median_handler(role: str, body: JSONObject) -> object:
    """Answers every role for a stdin/stdout program that prints the median of n numbers."""
    return {
        "analyzer": MEDIAN_SPEC,
        "test_designer": MEDIAN_TESTS,
        "programmer": MEDIAN_SOLUTION,
        "reviewer": "APPROVED\nIt reads the stated input and prints only the median.",
        "documenter": MEDIAN_DOCS,
    }.get(role, Reply.error(400, f"unknown role {role!r}"))


_ASKED = re.compile(r"<request>\s*(.*?)\s*</request>", re.S)


def asked_for(body: JSONObject) -> str:
    """The request an analyzer call asks about (its prompt's ``<request>`` block), else ""."""
    messages = body.get("messages")
    for message in reversed(messages if isinstance(messages, list) else []):
        content = message.get("content") if isinstance(message, dict) else None
        found = _ASKED.search(content) if isinstance(content, str) else None
        if found:
            return found.group(1)
    return ""


def telling(handler: Handler, topic: str, answers: str) -> Handler:
    """``handler``, saying so when it answers a request that never mentions ``topic``: a line
    on stderr (the server's console) and a note opening the spec's purpose, which the
    request's report shows (the crew ends it ``off_target``)."""
    note = f"[scripted endpoint: no script for this request; its one script answers {answers}]"

    def answer(role: str, body: JSONObject) -> object:
        reply = handler(role, body)
        request = asked_for(body) if role == "analyzer" else ""
        if not request or topic in request.lower() or not isinstance(reply, dict):
            return reply
        shown = " ".join(request.split())
        shown = shown[:80] + "..." * (len(shown) > 80)
        print(
            f"scripted endpoint: no script for {shown!r}; answering with its one script "
            f"({answers})",
            file=sys.stderr,
            flush=True,
        )
        return {**reply, "purpose": f"{note} {reply.get('purpose', '')}".strip()}

    return answer


# The scripts `python -m codegen.replay.scripted --script NAME` serves: each knows one request.
CANNED: dict[str, Handler] = {
    "primes": telling(primes_handler, "prime", "primes_up_to"),
    "median": telling(median_handler, "median", "the median program"),
}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--script", choices=sorted(CANNED), default="primes")
    args = parser.parse_args(argv)
    with ScriptedOpenAIServer(handler=CANNED[args.script], port=args.port) as server:
        print(f"OPENAI_BASE_URL={server.base_url}", flush=True)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass


if __name__ == "__main__":
    main()
