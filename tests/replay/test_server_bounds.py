"""The loopback servers bound what a client can make them read and keep (#46, finding 8).

Raw sockets, because a well-behaved HTTP client never sends these requests: a POST whose
``Content-Length`` is missing, negative or not a number, one over the limit, and a stream of
requests longer than the history keeps.
"""

from __future__ import annotations

import json
import socket
import time

import pytest

from codegen.replay import openai_server
from codegen.replay.history import History
from codegen.replay.scripted import ScriptedOpenAIServer
from codegen.testing.loopback_sources import FakeStackExchange

PATH = "/v1/chat/completions"
BODY = json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}]}).encode()


def exchange(port: int, head: bytes, body: bytes = b"", *, hang_up: bool = False) -> bytes:
    """Send ``head`` (request line and headers) and ``body``; what the server answers. With
    ``hang_up`` False the client keeps its side open, as a client that sends more would: a
    server reading to the end of the stream never answers (the socket times out)."""
    with socket.create_connection(("127.0.0.1", port), timeout=3) as sock:
        sock.sendall(head + b"\r\n" + body)
        if hang_up:
            sock.shutdown(socket.SHUT_WR)
        chunks = []
        try:
            while chunk := sock.recv(65536):
                chunks.append(chunk)
                if b"\r\n\r\n" in b"".join(chunks):
                    break
        except TimeoutError:
            pass
        return b"".join(chunks)


def status_of(reply: bytes) -> int:
    assert reply, "the server never answered"
    return int(reply.split(b" ", 2)[1])


def post_head(length: str | None) -> bytes:
    head = f"POST {PATH} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
    if length is not None:
        head += f"Content-Length: {length}\r\n"
    return head.encode()


@pytest.fixture
def server() -> ScriptedOpenAIServer:
    with ScriptedOpenAIServer(handler=lambda role, body: "ok") as srv:
        yield srv


@pytest.mark.parametrize(
    ("length", "status"),
    [(None, 411), ("-1", 400), ("abc", 400), ("+5", 400), (str(20_000_001), 413)],
)
def test_a_body_without_a_usable_length_is_refused_unread(
    server: ScriptedOpenAIServer, length: str | None, status: int
) -> None:
    started = time.monotonic()
    reply = exchange(server.port, post_head(length), BODY)
    assert status_of(reply) == status, reply[:200]
    payload = json.loads(reply.split(b"\r\n\r\n", 1)[1] or b"{}") if b"\r\n\r\n" in reply else {}
    head = reply.split(b"\r\n\r\n", 1)[0]
    assert b"Connection: close" in head  # the unread body is never taken for a request
    assert time.monotonic() - started < 2  # answered at once, not after reading to the end
    assert server.requests[-1].body is None and server.book.pending() == 0
    assert payload == {} or "\n" not in payload["error"]["message"]


def test_a_negative_length_does_not_read_until_the_client_hangs_up(
    server: ScriptedOpenAIServer,
) -> None:
    # Before: rfile.read(-1) read the whole stream and answered a completion from it.
    reply = exchange(server.port, post_head("-1"), BODY, hang_up=True)
    assert status_of(reply) == 400
    assert not [r for r in server.requests if r.body is not None]


def test_a_well_formed_post_is_still_answered(server: ScriptedOpenAIServer) -> None:
    reply = exchange(server.port, post_head(str(len(BODY))), BODY)
    assert status_of(reply) == 200
    assert server.requests[-1].body == json.loads(BODY)


def test_read_body_takes_exactly_the_declared_bytes() -> None:
    import io
    from email.message import Message

    headers = Message()
    headers["Content-Length"] = "3"
    assert openai_server.read_body(headers, io.BytesIO(b"abcdef")) == b"abc"
    headers.replace_header("Content-Length", "7")
    with pytest.raises(openai_server.BodyRefused) as refused:
        openai_server.read_body(headers, io.BytesIO(b"abcdefg"), limit=6)
    assert refused.value.status == 413


def test_the_history_keeps_the_newest_within_its_bounds() -> None:
    history: History[int] = History(max_items=3, max_bytes=100)
    for i in range(5):
        history.append(i, size=10)
    assert history == [2, 3, 4] and history.total == 5
    assert history[1:] == [3, 4] and history[-1] == 4 and len(history) == 3
    history.append(5, size=95)  # over the byte budget: everything older goes
    assert history == [5] and history.total == 6
    history.clear()
    assert history == [] and not history


def test_the_openai_server_keeps_a_bounded_history(server: ScriptedOpenAIServer) -> None:
    assert isinstance(server.requests, History) and isinstance(server.served, History)
    server.requests.max_items = 2
    for _ in range(4):
        assert status_of(exchange(server.port, post_head(str(len(BODY))), BODY)) == 200
    assert len(server.requests) == 2 and server.requests.total == 4


def test_the_fixture_servers_keep_a_bounded_history() -> None:
    with FakeStackExchange([], {}) as site:
        assert isinstance(site.requests, History)
        site.requests.max_items = 2
        port = site.httpd.server_address[1]
        for _ in range(3):
            exchange(port, b"GET /2.3/sites HTTP/1.1\r\nHost: x\r\n", hang_up=True)
        assert len(site.requests) == 2 and site.requests.total == 3
