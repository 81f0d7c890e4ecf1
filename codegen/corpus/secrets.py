"""Secret detection and redaction for corpus text.

The token patterns come from detect-secrets (the maintained detector list: AWS, GitHub,
GitLab, Slack, Stripe, OpenAI, PyPI, JWT, ...). We run each of its compiled patterns once over
a whole document instead of calling ``scan_line`` per line: measured on the standard library,
``scan_line`` costs ~0.9 ms per line (5 minutes for the stdlib) while whole-text regex passes
take well under a second. Three things detect-secrets does per line are done here per
document: private-key blocks are redacted whole (its detector only flags the BEGIN line),
high-entropy quoted strings use its Shannon-entropy function and default limits, and
``password = "..."``-style assignments use a keyword pattern.

Redaction replaces only the secret value with ``<REDACTED:kind>``, so a string literal stays a
string literal and the surrounding code still parses.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from itertools import pairwise
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from detect_secrets.plugins.high_entropy_strings import (
        Base64HighEntropyString,
        HexHighEntropyString,
    )

REDACTED = "<REDACTED:{kind}>"
# Bump when patterns change: cached scan results are keyed by it.
SECRETS_VERSION = "secrets-3"
# Public IPs are not secrets (docs and the stdlib are full of example addresses).
_SKIPPED_DETECTORS = {"IPPublicDetector", "PrivateKeyDetector"}

_PEM_BLOCK = re.compile(
    r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----.*?"
    r"(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|\Z)",
    re.DOTALL,
)
_PUTTY = re.compile(r"PuTTY-User-Key-File-\d:.*?(?:Private-MAC: \S+|\Z)", re.DOTALL)
# Quoted strings long enough to be keys; the charsets are detect-secrets' own.
_B64_CHARSET = re.escape("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=_-")
_QUOTED_B64 = re.compile(r"(['\"])([" + _B64_CHARSET + r"]{20,})\1")
_HEX = re.compile(r"^[0-9a-fA-F]+$")
# detect-secrets' default limits (Base64HighEntropyString 4.5, HexHighEntropyString 3.0).
B64_ENTROPY_LIMIT = 4.5
HEX_ENTROPY_LIMIT = 3.0
# name = "value" where the name says it is a credential; the value must look like one
# (no spaces, 8+ chars, a letter and a digit) so that `password = "password"` survives.
_KEYWORD = re.compile(
    r"(?i)(?:password|passwd|pwd|secret|api_?key|access_?key|auth_?token|token)\w*"
    r"""["']?\s*(?::=|=|:)\s*(?:[bru]{0,2})(['"])(?P<value>[^'"\s]{8,})\1"""
)
_HAS_DIGIT = re.compile(r"\d")
_HAS_ALPHA = re.compile(r"[A-Za-z]")


KEYWORD_ENTROPY_MIN = 3.0


def _shannon(value: str) -> float:
    counts = Counter(value)
    return -sum(n / len(value) * math.log2(n / len(value)) for n in counts.values())


def _kind(class_name: str) -> str:
    return class_name.removesuffix("Detector").lower()


# Vendor patterns of the form `<vendor>_key = "..."` (IBM, Cloudant, SoftLayer) backtrack at
# every word of a document; they only ever match on a line naming a credential, so they run
# on those lines alone (this keeps the whole stdlib scan around a second).
_CREDENTIAL_LINE = re.compile(r"(?im)^.*(?:key|pw|pass|token|secret|auth|cred).*$")


@cache
def _patterns() -> tuple[list[tuple[str, re.Pattern[str]]], list[tuple[str, re.Pattern[str]]]]:
    """detect-secrets' patterns: (whole-text, per-credential-line). Built on first use: the
    package costs ~0.07 s to import, and every Dagster process loads this module with the
    corpus assets while only corpus runs scan text."""
    from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
    from detect_secrets.plugins.base import RegexBasedDetector

    whole: list[tuple[str, re.Pattern[str]]] = []
    per_line: list[tuple[str, re.Pattern[str]]] = []
    for cls in get_mapping_from_secret_type_to_class().values():
        if not issubclass(cls, RegexBasedDetector) or cls.__name__ in _SKIPPED_DETECTORS:
            continue
        for p in cls.denylist:
            slow = p.pattern.startswith("(?:(?<=\\W)|(?<=^))")
            (per_line if slow else whole).append((_kind(cls.__name__), p))
    return whole, per_line


@cache
def _entropy_plugins() -> tuple[Base64HighEntropyString, HexHighEntropyString]:
    """detect-secrets' (base64, hex) entropy plugins at its default limits."""
    from detect_secrets.plugins.high_entropy_strings import (
        Base64HighEntropyString,
        HexHighEntropyString,
    )

    return (
        Base64HighEntropyString(limit=B64_ENTROPY_LIMIT),
        HexHighEntropyString(limit=HEX_ENTROPY_LIMIT),
    )


@dataclass(frozen=True)
class Finding:
    kind: str
    start: int
    end: int


def _group_span(match: re.Match[str]) -> tuple[int, int]:
    # detect-secrets patterns capture the secret in a group when context is matched around it.
    for i in range(1, (match.re.groups or 0) + 1):
        if match.group(i):
            return match.span(i)
    return match.span()


def _is_alphabet(value: str) -> bool:
    """Charset constants ("ABCDEFGH...", "0123456789abcdef") are high-entropy but not secrets:
    most neighbouring characters are consecutive code points, which random keys never are."""
    steps = sum(1 for a, b in pairwise(value) if ord(b) - ord(a) == 1)
    return steps >= (len(value) - 1) / 2


def _looks_random(value: str) -> str | None:
    if _is_alphabet(value):
        return None
    b64, hex_ = _entropy_plugins()
    if _HEX.match(value):
        # Short hex runs are mostly numbers, colours and checksums in tables.
        if len(value) >= 32 and hex_.calculate_shannon_entropy(value) > HEX_ENTROPY_LIMIT:
            return "hex_high_entropy"
        return None
    if b64.calculate_shannon_entropy(value) > B64_ENTROPY_LIMIT:
        return "high_entropy"
    return None


def find_secrets(text: str) -> Iterator[Finding]:
    """Every secret-looking span in ``text`` (may overlap; ``redact`` merges them)."""
    for rx, kind in ((_PEM_BLOCK, "private_key"), (_PUTTY, "private_key")):
        for m in rx.finditer(text):
            yield Finding(kind, m.start(), m.end())
    whole_text, per_line = _patterns()
    for kind, rx in whole_text:
        for m in rx.finditer(text):
            start, end = _group_span(m)
            if end > start:
                yield Finding(kind, start, end)
    for line in _CREDENTIAL_LINE.finditer(text):
        offset, line_text = line.start(), line.group()
        for kind, rx in per_line:
            for m in rx.finditer(line_text):
                start, end = _group_span(m)
                if end > start:
                    yield Finding(kind, offset + start, offset + end)
        for m in _KEYWORD.finditer(line_text):
            value = m.group("value")
            # Credential-like: letters and digits, not a tidy word such as "secrets-1".
            looks_random = _shannon(value) >= KEYWORD_ENTROPY_MIN
            if _HAS_DIGIT.search(value) and _HAS_ALPHA.search(value) and looks_random:
                yield Finding("keyword", offset + m.start("value"), offset + m.end("value"))
    for m in _QUOTED_B64.finditer(text):
        kind = _looks_random(m.group(2))
        if kind:
            yield Finding(kind, m.start(2), m.end(2))


def redact(text: str) -> tuple[str, Counter[str]]:
    """``text`` with every secret value replaced, and counts by kind."""
    findings = sorted(find_secrets(text), key=lambda f: (f.start, -f.end))
    if not findings:
        return text, Counter()
    counts: Counter[str] = Counter()
    out: list[str] = []
    pos = 0
    for f in findings:
        if f.start < pos:  # inside a span already redacted
            continue
        out.append(text[pos : f.start])
        # Keep the line count of a redacted block so citations by line stay right.
        newlines = text.count("\n", f.start, f.end)
        out.append(REDACTED.format(kind=f.kind) + "\n" * newlines)
        counts[f.kind] += 1
        pos = f.end
    out.append(text[pos:])
    return "".join(out), counts


def has_secret(text: str) -> bool:
    return next(find_secrets(text), None) is not None
