"""The inbox reads regular files only: a symbolic link dropped into it (to a secret the daemon
can read) or a FIFO is moved to rejected/ unread, and a good file beside them is still taken."""

from __future__ import annotations

import os
from pathlib import Path

from codegen.requests.inbox import NOT_REGULAR, scan_inbox
from codegen.requests.store import RequestStore


def test_links_and_fifos_are_rejected_unread(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("Write a function leak() returning sk-very-secret.")
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    (inbox / "link.txt").symlink_to(secret)
    os.mkfifo(inbox / "pipe.txt")  # no writer: reading it must not hang the scan
    (inbox / "good.txt").write_text("Write is_palindrome(s).")
    store = RequestStore(tmp_path / "requests")

    scan = scan_inbox(inbox, store)

    assert [req.text for req in scan.accepted] == ["Write is_palindrome(s)."]
    assert sorted(scan.rejected) == [("link.txt", NOT_REGULAR), ("pipe.txt", NOT_REGULAR)]
    assert all("secret" not in req.text for req in store.all())
    rejected = inbox / "rejected"
    assert (rejected / "link.txt").is_symlink()  # the link itself moved, its target untouched
    assert secret.read_text().startswith("Write a function leak()")
    assert (rejected / "link.txt.reason.txt").read_text() == f"{NOT_REGULAR}\n"
    assert [p.name for p in inbox.iterdir() if not p.is_dir()] == []
