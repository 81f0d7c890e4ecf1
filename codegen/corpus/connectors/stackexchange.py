"""Stack Overflow: questions with accepted answers, from the API (StackAPI) or a Posts.xml dump.

API: StackAPI takes ``base_url`` (tests point it at a loopback server), pages with
``has_more``, and itself sleeps for the ``backoff`` the API asks for. Each question is stored
as one Q&A document (question, then its accepted answer); questions without an accepted
answer are skipped and counted. Cursor: per tag, the newest ``last_activity_date`` seen,
passed back as ``fromdate``. The key comes from STACKEXCHANGE_KEY; without one the API allows
300 requests a day, which is said in the report. An exhausted quota (``quota_remaining`` 0 or
a ``throttle_violation``) stops the source with a clear message; what was fetched is kept.

Dump: ``Posts.xml`` from the Stack Exchange data dump, streamed with defusedxml's iterparse
(no entity expansion, constant memory apart from questions still waiting for their answer).
"""

from __future__ import annotations

import html
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TypedDict, cast
from xml.etree.ElementTree import ParseError

import requests
from defusedxml import DefusedXmlException
from defusedxml.ElementTree import iterparse
from stackapi import StackAPI, StackAPIError

from codegen.corpus.clean import html_to_markdown
from codegen.corpus.connectors.base import (
    Progress,
    SourceDisabled,
    SourceError,
    SourceReport,
    SourceState,
)
from codegen.corpus.model import Document, content_hash

QUESTION_FILTER = "withbody"  # a built-in filter: default fields plus `body`


# The API's JSON (https://api.stackexchange.com/docs/types/question), the fields used here.
class Question(TypedDict, total=False):
    question_id: int
    accepted_answer_id: int | None  # absent (or null) when no answer is accepted
    title: str
    body: str
    link: str
    tags: list[str]
    score: int
    creation_date: int  # epoch seconds
    last_activity_date: int


class Answer(TypedDict, total=False):
    answer_id: int
    question_id: int
    body: str
    score: int


class QuestionsPage(TypedDict, total=False):
    """What ``StackAPI.fetch`` returns: the items of every page it fetched, and the last
    page's wrapper fields."""

    items: list[Question]
    has_more: bool
    quota_remaining: int


class AnswersPage(TypedDict, total=False):
    items: list[Answer]


@dataclass
class StackExchangeConfig:
    api_url: str = "https://api.stackexchange.com"
    site: str = "stackoverflow"
    tags: list[str] = field(default_factory=list)
    max_pages: int = 5
    posts_xml: str | None = None
    key: str | None = field(default=None, repr=False)
    page_size: int = 100


def _qa_text(title: str, question_html: str, answer_html: str) -> str:
    return (
        f"# {html.unescape(title)}\n\n{html_to_markdown(question_html).strip()}\n\n"
        f"## Accepted answer\n\n{html_to_markdown(answer_html).strip()}\n"
    )


def _iso(ts: int | None) -> str | None:
    return datetime.fromtimestamp(ts, UTC).isoformat() if ts else None


def fetch_questions(
    cfg: StackExchangeConfig, state: SourceState, report: SourceReport, progress: Progress
) -> Iterator[Document]:
    if not cfg.tags and not cfg.posts_xml:
        raise SourceDisabled("no corpus.stackoverflow.tags and no posts_xml configured")
    if cfg.posts_xml:
        yield from _from_dump(Path(cfg.posts_xml), cfg.tags, report, progress)
    if cfg.tags:
        yield from _from_api(cfg, state, report, progress)


def _site(cfg: StackExchangeConfig, report: SourceReport) -> StackAPI:
    if not cfg.key:
        report.message = "STACKEXCHANGE_KEY is not set: the API allows 300 requests/day"
    try:
        site = StackAPI(
            cfg.site,
            base_url=cfg.api_url.rstrip("/"),
            key=cfg.key,
            max_pages=cfg.max_pages,
            page_size=cfg.page_size,
        )
    except StackAPIError as exc:
        raise _error(exc) from exc
    except (requests.RequestException, ValueError) as exc:
        raise SourceError(f"Stack Exchange API unreachable or invalid site: {exc}") from exc
    report.requests += 1
    return site


def _error(exc: StackAPIError) -> SourceError:
    code = getattr(exc, "code", "")
    message = getattr(exc, "message", str(exc))
    if code == "throttle_violation" or "throttle" in str(code):
        return SourceError(f"Stack Exchange quota exhausted: {message}; set STACKEXCHANGE_KEY")
    return SourceError(f"Stack Exchange API error {code}: {message}")


def _from_api(
    cfg: StackExchangeConfig, state: SourceState, report: SourceReport, progress: Progress
) -> Iterator[Document]:
    site = _site(cfg, report)
    cursors = state.setdefault("fromdate", {})
    for tag in cfg.tags:
        fromdate = int(cursors.get(tag, 0))
        try:
            res = cast(
                QuestionsPage,
                site.fetch(
                    "questions",
                    tagged=tag,
                    fromdate=fromdate or None,
                    sort="activity",
                    order="asc",
                    filter=QUESTION_FILTER,
                ),
            )
        except StackAPIError as exc:
            raise _error(exc) from exc
        except requests.RequestException as exc:
            raise SourceError(f"Stack Exchange request failed: {exc}") from exc
        report.requests += 1
        questions = [q for q in res["items"] if q.get("accepted_answer_id")]
        report.skip("no_accepted_answer", len(res["items"]) - len(questions))
        answers: dict[int, Answer] = {}
        ids = [a for q in questions if (a := q.get("accepted_answer_id"))]
        for start in range(0, len(ids), 100):  # the API takes up to 100 ids per call
            try:
                got = cast(
                    AnswersPage,
                    site.fetch("answers/{ids}", ids=ids[start : start + 100], filter="withbody"),
                )
            except StackAPIError as exc:
                raise _error(exc) from exc
            report.requests += 1
            answers.update({a["answer_id"]: a for a in got["items"]})
        newest = fromdate
        for q in questions:
            a = answers.get(q.get("accepted_answer_id") or 0)
            if a is None:
                report.skip("accepted_answer_missing")
                continue
            newest = max(newest, int(q.get("last_activity_date") or 0))
            yield Document(
                id=content_hash(f"stackoverflow:{cfg.site}:{q['question_id']}")[:32],
                source="stackoverflow",
                uri=q.get("link") or f"https://stackoverflow.com/q/{q['question_id']}",
                title=html.unescape(q["title"]),
                text=_qa_text(q["title"], q.get("body", ""), a.get("body", "")),
                language="qa",
                licence="CC BY-SA 4.0",
                metadata={
                    "question_id": q["question_id"],
                    "tags": q.get("tags", []),
                    "score": int(q.get("score", 0)) + int(a.get("score", 0)),
                    "accepted": True,
                    "created_at": _iso(q.get("creation_date")),
                    "updated_at": _iso(q.get("last_activity_date")),
                },
            )
        if newest:
            cursors[tag] = newest + 1  # fromdate is inclusive
        quota = res.get("quota_remaining", -1)
        progress(f"stackoverflow: [{tag}] {len(questions)} answered questions, quota {quota}")
        if res.get("has_more"):
            report.skip("pages_beyond_max_pages")
        if quota == 0:
            raise SourceError("Stack Exchange quota exhausted (quota_remaining 0); try tomorrow")


def _tags_of(value: str) -> list[str]:
    # Older dumps write "<python><list>", newer ones "|python|list|".
    return [t for t in value.replace("<", "|").replace(">", "|").split("|") if t]


def _from_dump(
    path: Path, tags: list[str], report: SourceReport, progress: Progress
) -> Iterator[Document]:
    if not path.is_file():
        raise SourceError(f"posts_xml {path} does not exist")
    wanted = set(tags)
    waiting: dict[str, dict[str, str]] = {}  # accepted answer id -> question row
    n = 0
    try:
        for _event, elem in iterparse(str(path), events=("end",)):
            if elem.tag != "row":
                continue
            row = dict(elem.attrib)
            elem.clear()  # constant memory on multi-GB dumps
            n += 1
            if n % 100_000 == 0:
                progress(f"stackoverflow: {n} dump rows read")
            if row.get("PostTypeId") == "1":
                row_tags = _tags_of(row.get("Tags", ""))
                if wanted and not wanted.intersection(row_tags):
                    continue
                if not row.get("AcceptedAnswerId"):
                    report.skip("no_accepted_answer")
                    continue
                waiting[row["AcceptedAnswerId"]] = row
            elif row.get("PostTypeId") == "2" and row.get("Id") in waiting:
                q = waiting.pop(row["Id"])
                yield Document(
                    id=content_hash(f"stackoverflow:dump:{q['Id']}")[:32],
                    source="stackoverflow",
                    uri=f"https://stackoverflow.com/q/{q['Id']}",
                    title=q.get("Title", ""),
                    text=_qa_text(q.get("Title", ""), q.get("Body", ""), row.get("Body", "")),
                    language="qa",
                    licence="CC BY-SA 4.0",
                    metadata={
                        "question_id": int(q["Id"]),
                        "tags": _tags_of(q.get("Tags", "")),
                        "score": int(q.get("Score", 0) or 0) + int(row.get("Score", 0) or 0),
                        "accepted": True,
                        "created_at": q.get("CreationDate"),
                        "updated_at": q.get("LastActivityDate"),
                    },
                )
    except (ParseError, DefusedXmlException) as exc:
        raise SourceError(f"{path.name} is malformed after {n} rows: {exc}") from exc
    report.skip("accepted_answer_not_in_dump", len(waiting))
