"""GitHub rate limits: waiting for the reset versus stopping the source, on a loopback GitHub.

The loopback server (codegen/testing/loopback_sources.py) speaks GitHub's REST shapes and spends its
quota mid-pagination: issues come one per page, and after ``--quota`` requests it answers 403
(or 429) with ``X-RateLimit-Remaining: 0`` until ``X-RateLimit-Reset``, ``--reset-in`` seconds
later. Per status, in the same run:

* ``wait``: today's default (``max_rate_limit_wait_s`` 900): the source waits for the reset and
  finishes the listing;
* ``stop``: ``max_rate_limit_wait_s`` 0, the previous behaviour (stop at the first spent
  quota, keep what was fetched, leave the cursor);
* ``reset_beyond_max``: the reset an hour away with the default bound: how quickly the source
  gives up and what it says.

    .venv/bin/python -m benchmarks.corpus.github_rate_limit [--issues 12] [--quota 4] [--reset-in 2]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Any

from codegen.corpus.connectors import GitHubConfig
from codegen.corpus.sources import refresh_source
from codegen.corpus.store import raw_path, read_documents


def scenario(
    status: int, issues: int, quota: int, reset_in: float, max_wait_s: float
) -> dict[str, Any]:
    from codegen.testing.loopback_sources import FakeGitHub, FakeRepo, issue

    repo = FakeRepo(
        "acme/widgets",
        {},
        issues=[issue(n, f"Issue {n}", "body", f"2024-01-{n:02d}T00:00:00Z") for n in range(1, 29)][
            :issues
        ],
    )
    with tempfile.TemporaryDirectory() as tmp, FakeGitHub([repo], per_page=1) as gh:
        gh.rate_limited_status = status
        gh.rate_remaining = quota
        gh.rate_reset = int(time.time() + reset_in)
        cfg = GitHubConfig(
            api_url=gh.base_url, issue_repos=["acme/widgets"], max_rate_limit_wait_s=max_wait_s
        )
        started = time.perf_counter()
        report = refresh_source("github_issues", cfg, Path(tmp))
        seconds = time.perf_counter() - started
        stored = sum(1 for _ in read_documents(raw_path(Path(tmp), "github_issues")))
        return {
            "status": report.status,
            "issues_stored": stored,
            "of": issues,
            "rate_limited_responses": gh.rate_limited_responses,
            "waits": report.rate_limit_waits,
            "waited_s": report.rate_limit_waited_s,
            "wall_s": round(seconds, 3),
            "message": report.message,
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--issues", type=int, default=12)
    parser.add_argument("--quota", type=int, default=4, help="requests before the 403/429")
    parser.add_argument("--reset-in", type=float, default=2.0, help="seconds to the reset")
    args = parser.parse_args()
    out: dict[str, Any] = {"issues": args.issues, "quota": args.quota, "reset_in_s": args.reset_in}
    for status in (403, 429):
        out[str(status)] = {
            "wait": scenario(status, args.issues, args.quota, args.reset_in, 900.0),
            "stop": scenario(status, args.issues, args.quota, args.reset_in, 0.0),
            "reset_beyond_max": scenario(status, args.issues, args.quota, 3600.0, 900.0),
        }
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
