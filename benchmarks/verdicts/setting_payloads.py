"""Issue 46's payloads against the operator's settings and the edges (findings 4 and 8b-8d): a
launch's run config overriding resource fields, the package set's download without hashes, a
symbolic link in the inbox, a server taking ``Content-Length: -1``."""

from __future__ import annotations

import itertools
import json
import socket
import sys
import tempfile
from pathlib import Path
from typing import Any

from benchmarks.verdicts.payload_kit import BLOCKED, ERROR, SUCCEEDED, Result, result

# -- 4: a launch overrides the operator's settings ----------------------------------------------

ATTACKER_URL = "http://attacker.invalid/v1"
OVERRIDES: dict[str, dict[str, Any]] = {
    "llm.base_url": {"llm": {"base_url": ATTACKER_URL}},
    "llm.candidates[].api_key_env": {"llm": {"candidates": [{"api_key_env": "GITHUB_TOKEN"}]}},
    "llm.candidates[].base_url": {"llm": {"candidates": [{"base_url": ATTACKER_URL}]}},
    "llm.allowed_base_urls": {"llm": {"allowed_base_urls": [ATTACKER_URL]}},
    "llm.reliability_file": {"llm": {"reliability_file": "/tmp/attacker-reliability.json"}},
    "sandbox.memory_mb": {"sandbox": {"memory_mb": 65536}},
    "sandbox.pids": {"sandbox": {"pids": 100000}},
    "sandbox.timeout_s": {"sandbox": {"timeout_s": 86400.0}},
    "sandbox.image": {"sandbox": {"image": "attacker/sandbox:latest"}},
    "sandbox.backend": {"sandbox": {"backend": "bwrap"}},
    "settings.home": {"settings": {"home": "/tmp/attacker-home"}},
    "vector_index.home": {"vector_index": {"home": "/tmp/attacker-home"}},
}


def launch_overrides(backend: str) -> list[Result]:
    """4: each resource field a launch's run config overrides, checked with Dagster's
    ``validate_run_config`` on every job that has the resource: accepted by any is a success."""
    from dagster import validate_run_config

    from codegen.orchestration.definitions import defs

    # The request job first: the one a launch of a request uses, named in the details.
    jobs = sorted(
        defs.resolve_all_job_defs(), key=lambda job: (job.name.startswith("__"), job.name)
    )
    results = []
    for field, resources in OVERRIDES.items():
        key = next(iter(resources))
        having = [job for job in jobs if key in job.resource_defs]
        if not having:
            results.append(result(f"4_override_{field}", BLOCKED, f"no job has resource {key}"))
            continue
        accepted, refusals = [], []
        for job in having:
            config = {"resources": {key: {"config": resources[key]}}}
            try:
                validate_run_config(job, config)
                accepted.append(job.name)
            except Exception as exc:  # Dagster's invalid-config error, whatever its class
                refusals.append(str(exc).splitlines()[0:2])
        if accepted:
            line = f"accepted by {len(accepted)} of {len(having)} jobs, e.g. {accepted[0]}"
            results.append(result(f"4_override_{field}", SUCCEEDED, line))
        else:
            line = f"refused by all {len(having)} jobs: {refusals[0]}"
            results.append(result(f"4_override_{field}", BLOCKED, line))
    return results


# -- 8: the smaller ones ---------------------------------------------------------------------


LOCK_FLAGS = ("-r", "--requirement", "-c", "--constraint")


def unhashed_package_set(backend: str) -> list[Result]:
    """8b: what the wheelhouse build gives pip for the default set: pins of the top-level
    names only and no hashes (pip may pick any version of what they pull in). Blocked when
    pip is told ``--require-hashes`` or reads a lock whose every line has a hash."""
    import subprocess

    from codegen.sandbox.image import package_set

    # A probe watches what pip is told from inside the module that tells it: the one the
    # face's own modules import (in both trees), never a public name of the room.
    wheelhouse = sys.modules["codegen.sandbox.image.wheelhouse"]

    seen: list[list[str]] = []
    locks: dict[str, str] = {}  # each file pip was told to read, as it was then

    def record(args: list[str], *rest: Any, **kw: Any) -> None:
        seen.append([str(a) for a in args])
        for flag, value in itertools.pairwise(seen[-1]):
            if flag in LOCK_FLAGS and Path(value).is_file():
                locks[value] = Path(value).read_text()

    def record_run(cmd: Any, *rest: Any, **kw: Any) -> subprocess.CompletedProcess[str]:
        record(cmd)
        return subprocess.CompletedProcess(cmd, 0, "", "")

    wheelhouse._pip = record  # type: ignore[attr-defined]
    wheelhouse.subprocess.run = record_run  # type: ignore[attr-defined]
    cache = Path(tempfile.mkdtemp(prefix="payload-8b-"))
    try:
        wheelhouse.ensure_wheelhouse(package_set(), cache)
    except Exception as exc:  # a layout of its own after the fix: judged by what pip got
        if not seen:
            return [result("8b_package_set_unhashed", ERROR, f"{type(exc).__name__}: {exc}")]
    downloads = [args for args in seen if "download" in args]
    if not downloads:
        return [result("8b_package_set_unhashed", ERROR, f"no pip download seen: {seen[:2]}")]
    args = downloads[0]
    hashed = "--require-hashes" in args
    for flag, value in itertools.pairwise(args):
        if flag in LOCK_FLAGS and not hashed:
            # A lock's entries: continuation lines joined, each must carry its hashes.
            text = locks.get(value, "").replace("\\\n", " ")
            entries = [ln for ln in text.splitlines() if ln.strip() and not ln.startswith("#")]
            hashed = bool(entries) and all("--hash=" in entry for entry in entries)
    pinned = " ".join(a for a in args if "==" in a)
    line = f"pip download of {pinned or 'a lock'}: require-hashes={hashed}"
    return [result("8b_package_set_unhashed", BLOCKED if hashed else SUCCEEDED, line)]


def inbox_symlink(backend: str) -> list[Result]:
    """8c: a symbolic link dropped into the inbox, pointing at a file the daemon can read:
    succeeded when the file's text became a stored request (what the model would be sent)."""
    from codegen.requests.inbox import scan_inbox
    from codegen.requests.store import RequestStore

    root = Path(tempfile.mkdtemp(prefix="payload-8c-"))
    secret = root / "operator-secret.txt"
    secret.write_text("Write a function; the operator's secret is SECRET-8c-71f0.\n")
    inbox = root / "inbox"
    inbox.mkdir()
    (inbox / "request.txt").symlink_to(secret)
    (inbox / "request.json").symlink_to(secret)
    scan = scan_inbox(inbox, RequestStore(root / "store"))
    leaked = [r for r in scan.accepted if "SECRET-8c" in str(getattr(r, "text", r))]
    line = f"accepted {len(scan.accepted)}, rejected {[why for _, why in scan.rejected][:1]}"
    return [result("8c_inbox_follows_symlink", SUCCEEDED if leaked else BLOCKED, line)]


def server_negative_length(backend: str) -> list[Result]:
    """8d: the scripted OpenAI-compatible server given ``Content-Length: -1`` (read: to the
    end of the stream) answers the request instead of refusing it."""
    from codegen.replay.scripted import ScriptedOpenAIServer

    body = json.dumps({"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}]})
    server = ScriptedOpenAIServer(handler=lambda role, request: "hello")
    with server, socket.create_connection(("127.0.0.1", server.port), timeout=10) as conn:
        head = (
            "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n"
            "Content-Type: application/json\r\nContent-Length: -1\r\n\r\n"
        )
        conn.sendall(head.encode() + body.encode())
        conn.shutdown(socket.SHUT_WR)
        reply = b""
        while chunk := conn.recv(65536):
            reply += chunk
    status = reply.split(b"\r\n", 1)[0].decode(errors="replace")
    answered = " 200 " in status + " "
    return [
        result(
            "8d_server_negative_content_length",
            SUCCEEDED if answered else BLOCKED,
            f"the server replied {status!r}",
        )
    ]
