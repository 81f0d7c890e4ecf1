"""What a job can write, and whether the next job in the same pooled sandbox sees it.

One job tries to create a file in every directory of the sandbox (all but /proc and /sys) and
fills every writable tmpfs until it refuses; later jobs in the *same* boxes search the whole
file system for anything it left. Both backends must give the same answer: only the wiped
dirs are writable, each holds at most its size, and nothing survives into the next job.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest
from sandbox_support import ROOMY, assert_clean, assert_still_works

from codegen.sandbox import SandboxUnavailable, open_sandbox
from codegen.sandbox.api import Sandbox
from codegen.sandbox.backends import backend_label
from codegen.sandbox.backends.bwrap import processes_of_uid
from codegen.sandbox.image import HOST_BACKEND

MIB = 1 << 20
# The only places a job may write: the dirs the supervisor wipes after every job.
WIPED = {"/work", "/tmp", "/dev/shm", "/dev/mqueue"}
# Each tmpfs's size, from the job's limits (/dev/shm: min(workdir_mb, 64), on both backends).
SIZES_MB = {"/work": ROOMY.workdir_mb, "/tmp": ROOMY.workdir_mb, "/dev/shm": ROOMY.workdir_mb}

PLANT = r"""
import errno, json, os, sys
name, sizes = sys.argv[1], json.loads(sys.argv[2])

writable = []
for root, dirs, _files in os.walk("/"):
    if root == "/":
        dirs[:] = [d for d in dirs if d not in ("proc", "sys")]
    try:
        fd = os.open(os.path.join(root, name), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except OSError:
        continue
    os.close(fd)
    writable.append(root)

def fill(path, cap):
    # Files of 1 MiB writes until the file system refuses (EFBIG only ends one file: the
    # file-size rlimit); stop at `cap` so an unsized tmpfs shows up as "CAP".
    total, i, chunk = 0, 0, b"\0" * (1 << 20)
    while total < cap:
        try:
            fd = os.open(f"{path}/{name}.fill{i}", os.O_WRONLY | os.O_CREAT | os.O_EXCL)
        except OSError as exc:
            return total, errno.errorcode.get(exc.errno, str(exc.errno))
        try:
            while total < cap:
                total += os.write(fd, chunk)
        except OSError as exc:
            if exc.errno != errno.EFBIG:
                return total, errno.errorcode.get(exc.errno, str(exc.errno))
        finally:
            os.close(fd)
        i += 1
    return total, "CAP"

held, size = {}, {}
for path, mb in sizes.items():
    vfs = os.statvfs(path)
    size[path] = vfs.f_blocks * vfs.f_frsize
    held[path] = fill(path, 4 * mb << 20)
box = os.stat("/work").st_dev  # one tmpfs per box: which pooled box ran this job
print(json.dumps({"box": box, "writable": writable, "held": held, "size": size}))
"""

PROBE = r"""
import json, os, sys
name = sys.argv[1]
found = []
for root, dirs, files in os.walk("/"):
    if root == "/":
        dirs[:] = [d for d in dirs if d not in ("proc", "sys")]
    found += [os.path.join(root, f) for f in files + dirs if name in f]
left = {d: sorted(os.listdir(d)) for d in sys.argv[2:] if os.path.isdir(d)}
print(json.dumps({"box": os.stat("/work").st_dev, "found": found, "left": left}))
"""


def plant_then_probe(sb: Sandbox, boxes: int) -> None:
    """Plant in each of ``boxes`` pooled boxes, then probe each of them again."""
    name = f"codegen-left-{uuid.uuid4().hex}"
    planted: set[int] = set()
    for _ in range(boxes):
        result = sb.run(
            {"plant.py": PLANT}, ["python3", "plant.py", name, json.dumps(SIZES_MB)], ROOMY
        )
        assert result.exit_code == 0, result
        assert "sandbox discarded" not in result.stderr, result.stderr  # reset verified: reused
        seen = json.loads(result.stdout)
        planted.add(seen["box"])
        assert set(seen["writable"]) <= WIPED, seen["writable"]
        assert {"/work", "/tmp"} <= set(seen["writable"]), seen["writable"]
        for path, mb in SIZES_MB.items():
            written, why = seen["held"][path]
            assert why in ("ENOSPC", "EFBIG"), (path, written, why)  # never "CAP": sized
            assert written <= mb * MIB, (path, written)
            assert seen["size"][path] <= mb * MIB, (path, seen["size"][path])
    probed: set[int] = set()
    for _ in range(3 * boxes):  # the pool hands boxes out in turn; every planted one again
        result = sb.run({"probe.py": PROBE}, ["python3", "probe.py", name, *sorted(WIPED)], ROOMY)
        assert result.exit_code == 0, result
        seen = json.loads(result.stdout)
        assert seen["found"] == [], seen["found"]
        left = seen["left"]
        assert left.pop("/work") == ["probe.py"], seen
        assert all(names == [] for names in left.values()), left
        probed.add(seen["box"])
        if planted <= probed:
            break
    assert planted <= probed, "a planted box was never probed again"


def test_a_job_leaves_nothing_a_later_job_sees_and_holds_at_most_its_sizes(
    sb: Sandbox,
) -> None:
    plant_then_probe(sb, sb.pool_size)  # type: ignore[attr-defined]
    assert_still_works(sb)
    assert_clean(sb)


@pytest.mark.bwrap
def test_host_usr_only_by_setting_and_then_named_and_as_tight(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """No debootstrapped root: bubblewrap refuses unless asked to bind the host's /usr, and
    then says so in every result and passes the same probes (read-only root, sized tmpfs)."""
    import shutil

    if shutil.which("bwrap") is None:
        pytest.skip("bubblewrap is not installed")
    monkeypatch.setenv("CODEGEN_SANDBOX_CACHE", str(tmp_path))  # a cache with no root in it
    with pytest.raises(SandboxUnavailable, match="bwrap_host_usr"):
        open_sandbox("bwrap", pool_size=1, default_limits=ROOMY)
    assert backend_label("bwrap", False) == "bwrap"
    assert backend_label("bwrap", True) == HOST_BACKEND
    assert backend_label("docker", True) == "docker"
    sb = open_sandbox("bwrap", pool_size=1, default_limits=ROOMY, host_usr=True)
    try:
        assert sb.backend == HOST_BACKEND
        assert sb.run({}, ["true"]).backend == HOST_BACKEND
        plant_then_probe(sb, 1)
    finally:
        sb.close()
    # (assert_clean would count the session's other bwrap sandboxes: this one's uids only.)
    for uid in sb.slot_uids():  # type: ignore[attr-defined]
        assert processes_of_uid(uid) == [], f"bwrap uid {uid} left processes"
