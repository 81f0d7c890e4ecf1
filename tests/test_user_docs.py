"""User docs stay readable: the README is the front door (at most 300 lines), no page in docs/
runs past 600 lines, and neither carries project history (issue numbers, session dates),
which belongs in CHANGELOG.md and the git log."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
USER_DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
MAX_LINES = {"README.md": 300}
MAX_DOC_LINES = 600

# An issue reference ("issue 37", "Issue #39", "#41") or a dated entry ("2026-12-03",
# "session 16"). Markdown headings ("## x") and anchors ("#quick-start") do not match.
HISTORY = re.compile(
    r"\bissues?\s+#?\d+|(?<![\w/#])#\d+\b|\b20\d\d-\d\d-\d\d\b|\bsession\s+\d+",
    re.IGNORECASE,
)


def _history_lines(text: str) -> list[str]:
    return [
        f"{n}: {line.strip()}"
        for n, line in enumerate(text.splitlines(), 1)
        if HISTORY.search(line)
    ]


@pytest.mark.parametrize("doc", USER_DOCS, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_user_doc_is_short_and_has_no_history(doc: Path) -> None:
    text = doc.read_text(encoding="utf-8")
    limit = MAX_LINES.get(doc.name if doc.parent == ROOT else "", MAX_DOC_LINES)
    assert len(text.splitlines()) <= limit, f"{doc.name}: over {limit} lines"
    assert _history_lines(text) == [], f"{doc.name}: history belongs in CHANGELOG.md"


@pytest.mark.parametrize(
    ("line", "history"),
    [
        ("fixed in issue 37", True),
        ("see Issue #39 for why", True),
        ("closes #41.", True),
        ("measured 2026-12-03 on a VNNI machine", True),
        ("session 16 measured it", True),
        ("## Quick start", False),
        ("[the map](#map-of-the-docs)", False),
        ("HumanEval/111 imports pandas", False),
        ("colour #ff0000", False),
        ("164 of 164 tasks, 2 issues listed", False),
    ],
)
def test_history_pattern(line: str, history: bool) -> None:
    assert bool(HISTORY.search(line)) is history
