"""HumanEval through the full crew against a scripted OpenAI-compatible server on loopback.

    .venv/bin/python -m benchmarks.crew.humaneval_scripted_crew [--limit N] [--solve-every K]

The scripted model solves every K-th task (canonical code) and answers the rest with a body
that returns None. Baseline, in the same run: the expected pass@1 (the solved fraction),
which the measured pass@1 must equal exactly. Also reports what the crew sends: requests and
prompt tokens per task and per role (the server's usage estimate, 4 characters per token),
so token cost can be projected for a real model (see CHANGELOG.md), and the anti-leak
count over every task: requests holding any distinctive line of a hidden check body.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from collections import Counter


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--solve-every", type=int, default=3)
    args = parser.parse_args()

    os.environ["CODEGEN_HOME"] = tempfile.mkdtemp(prefix="codegen-crew-eval-")
    from codegen.evaluation.harness import CREW, evaluate
    from codegen.evaluation.humaneval import get_problem, hidden_check_lines, select_keys
    from codegen.evaluation.report import summarize
    from codegen.orchestration.launch import open_session, sandbox_resource
    from codegen.replay.scripted import ScriptedOpenAIServer, estimate_tokens
    from codegen.settings import get_settings
    from codegen.testing.scripted_crew import make_handler

    keys = select_keys(args.limit)
    solve = set(keys[:: args.solve_every])
    with ScriptedOpenAIServer(handler=make_handler(solve)) as server:
        os.environ["OPENAI_BASE_URL"] = server.base_url
        os.environ["OPENAI_API_KEY"] = "sk-benchmark-not-a-secret"
        settings = get_settings()
        started = time.perf_counter()
        s = open_session(settings, None, CREW)
        with sandbox_resource(settings).open() as box:
            generator = s.generator(box, sandbox_resource(settings).limits())
            _, errors = evaluate(s.store, s.config, keys, generator, box, workers=s.workers)
            summary = summarize(s.store, s.config.config_id, CREW, keys)
        wall = time.perf_counter() - started
        posts = [r for r in server.requests if r.method == "POST"]
    # Anti-leak over every task used: no distinctive line of any hidden check body, and no
    # "def check(", in anything the crew sent.
    hidden = {line for k in keys for line in hidden_check_lines(get_problem(k))}
    leaking = [
        r for r in posts if "def check(" in r.prompt_text or any(h in r.prompt_text for h in hidden)
    ]
    per_role_calls = Counter(r.role for r in posts)
    per_role_tokens: Counter[str] = Counter()
    for r in posts:
        per_role_tokens[r.role or "?"] += estimate_tokens(r.prompt_text)
    n = len(keys)
    expected = len(solve) / n
    print(
        json.dumps(
            {
                "tasks": n,
                "backend": box.backend,
                "expected_pass@1": expected,
                "pass@1": summary.pass_at_1,
                "exact": summary.pass_at_1 == expected,
                "errors": len(errors),
                "crew_statuses": summary.crew_statuses,
                "failures_by_category": summary.failures_by_category,
                "requests": len(posts),
                "requests_with_hidden_test_code": len(leaking),
                "hidden_lines_checked": len(hidden),
                "requests_per_task": round(len(posts) / n, 2),
                "prompt_tokens_per_task": round(summary.prompt_tokens / n, 1),
                "completion_tokens_per_task": round(summary.completion_tokens / n, 1),
                "prompt_tokens_per_task_by_role": {
                    k: round(v / n, 1) for k, v in sorted(per_role_tokens.items())
                },
                "calls_per_task_by_role": {
                    k: round(v / n, 2) for k, v in sorted(per_role_calls.items())
                },
                "cost_usd_gpt_4o_mini_prices": summary.cost_usd,
                "wall_s": round(wall, 1),
                "s_per_task": round(wall / n, 2),
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
