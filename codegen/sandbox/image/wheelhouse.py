"""The wheelhouse of a package set and the installed tree made from it, for the sandbox's python3.

At build time only: the set's lock (``lock.py``: the named set's committed one, or, with
``[sandbox] packages``, one resolved now by ``pip install --dry-run --report`` and written to
``<cache>/locks/``) is what is installed. ``pip download --require-hashes --no-deps`` fetches
exactly its wheels for the sandbox's Python (CPython 3.11 on glibc 2.36, Debian bookworm; not
the host's) from the package index pip is configured with, then ``pip install --no-index
--require-hashes --no-deps --target`` unpacks them, offline, into a plain directory that the
image and the bubblewrap root both mount as ``/opt/sandbox-site``: a wheel whose bytes are not
the lock's is refused at both steps, and nothing the lock lacks is fetched. All three are
cached under the sandbox cache dir by the set's digest, with a marker written last, so a
second build does nothing and an interrupted one starts that step again.
"""

from __future__ import annotations

import hashlib
import json
import platform
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from codegen.sandbox.errors import SandboxError
from codegen.sandbox.image.lock import (
    LOCK_MACHINE,
    REGENERATE,
    Lock,
    Locked,
    lock_resource,
    make_lock,
    parse_lock,
    stale_requirements,
)
from codegen.sandbox.image.packages import SANDBOX_PYTHON, PackageSet

# Where the set lives inside the sandbox; a .pth file in the interpreter's site dir adds it.
SITE_MOUNT = "/opt/sandbox-site"
PTH_NAME = "sandbox-packages.pth"
# glibc of Debian bookworm: wheels tagged for this or any older manylinux run there.
GLIBC = (2, 36)

Progress = Callable[[str], None]


def _quiet(_: str) -> None:
    pass


def target_args(machine: str | None = None) -> list[str]:
    """pip's options that pick wheels for the sandbox's interpreter rather than the host's.

    pip does not widen ``manylinux_2_X`` to older glibc versions itself, so each is listed.
    """
    arch = machine or platform.machine()
    platforms = [f"manylinux_{GLIBC[0]}_{minor}_{arch}" for minor in range(GLIBC[1], 16, -1)]
    platforms.append(f"manylinux2014_{arch}")  # pip adds manylinux2010 and manylinux1
    abi = "cp" + SANDBOX_PYTHON.replace(".", "")
    args = ["--only-binary=:all:", "--python-version", SANDBOX_PYTHON, "--implementation", "cp"]
    args += ["--abi", abi]
    for tag in platforms:
        args += ["--platform", tag]
    return args


def _marker(path: Path) -> Path:
    return path.with_name(path.name + ".complete")


def _pip(args: list[str], what: str) -> None:
    cmd = [sys.executable, "-m", "pip", "--disable-pip-version-check", *args]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        lines = [ln for ln in (proc.stderr + proc.stdout).splitlines() if "ERROR" in ln]
        why = " ".join((lines or (proc.stderr + proc.stdout).splitlines())[-3:]).strip()
        raise SandboxError(f"{what} failed (pip exit {proc.returncode}): {why[-600:]}")


def _fresh(path: Path) -> Path:
    partial = path.with_name(path.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.parent.mkdir(parents=True, exist_ok=True)
    return partial


def _publish(partial: Path, path: Path) -> Path:
    shutil.rmtree(path, ignore_errors=True)
    partial.rename(path)
    _marker(path).touch()
    return path


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def lock_from_report(report: dict[str, object], hash_of: Callable[[str, str], str]) -> Lock:
    """The lock of what a ``pip install --report`` would install: each distribution's name,
    version and the sha256 the index gave for its wheel (``hash_of(name, version)`` where the
    index gave none)."""
    entries = []
    for item in report.get("install") or []:  # type: ignore[attr-defined]
        name = canonicalize_name(item["metadata"]["name"])
        version = item["metadata"]["version"]
        hashes = (item["download_info"].get("archive_info") or {}).get("hashes") or {}
        entries.append(Locked(name, version, (hashes.get("sha256") or hash_of(name, version),)))
    return make_lock(entries)


def resolve_lock(requirements: list[str] | tuple[str, ...], *, isolated: bool = False) -> Lock:
    """Every distribution ``requirements`` need in the sandbox's Python, pinned with hashes,
    from the package index (``isolated``: PyPI, whatever pip's configuration names). Nothing
    is installed; most wheels are not even downloaded (the index serves their metadata)."""
    if not requirements:
        return Lock()
    common = ["--isolated"] if isolated else []
    with tempfile.TemporaryDirectory(prefix="codegen-lock-") as tmp:

        def hash_of(name: str, version: str) -> str:
            into = Path(tmp) / f"download-{name}"
            args = ["download", "-q", "--no-deps", *target_args(), "-d", str(into)]
            _pip([*common, *args, f"{name}=={version}"], f"pip download {name}=={version}")
            return _sha256(next(into.iterdir()))

        report = Path(tmp) / "report.json"
        args = ["install", "-q", "--dry-run", "--ignore-installed", "--report", str(report)]
        args += ["--target", str(Path(tmp) / "target"), *target_args()]
        _pip([*common, *args, *requirements], "resolving the package set (pip install --dry-run)")
        return lock_from_report(json.loads(report.read_text(encoding="utf-8")), hash_of)


def _write_atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)


def lock_path(packages: PackageSet, cache_dir: Path) -> Path:
    return cache_dir / "locks" / f"{packages.name}-{packages.digest}.txt"


def ensure_lock(packages: PackageSet, cache_dir: Path, progress: Progress = _quiet) -> Path:
    """The lock file this build installs, beside the build: the named set's committed lock,
    or, with ``[sandbox] packages``, the set's pins and those resolved into one now, once per
    digest (delete the file to resolve again)."""
    path = lock_path(packages, cache_dir)
    if path.exists():
        found = parse_lock(path.read_text(encoding="utf-8"), str(path))  # refuses a damaged one
        # A resolved lock is the record of its build; a named set's is the committed one.
        if packages.extra or found == packages.lock:
            return path
    named = {Requirement(r).name for r in packages.extra}
    base = [r for r in packages.requirements if Requirement(r).name not in named]
    stale = stale_requirements(packages.lock, base)
    if stale:
        set_name = packages.name.removesuffix("-custom")
        raise SandboxError(
            f"{lock_resource(set_name)} does not lock {', '.join(stale)} of package set "
            f"{set_name!r}; run {REGENERATE}"
        )
    if not packages.extra:
        if packages.lock.entries and platform.machine() != LOCK_MACHINE:
            raise SandboxError(
                f"the locked package sets name wheels for {LOCK_MACHINE}, not "
                f"{platform.machine()}; add a requirement ([sandbox] packages) to resolve "
                "a set for this machine at build time"
            )
        lock = packages.lock
        header = f"The {packages.name} package set's committed lock."
    else:
        pins = [f"{n}=={v}" for n, v in packages.lock.pins().items() if n not in named]
        progress(f"resolving {', '.join(packages.extra)} with the set's pins into a lock")
        lock = resolve_lock([*pins, *packages.extra])
        header = (
            f"{packages.name}: the set's pins plus [sandbox] packages "
            f"({', '.join(packages.extra)}), resolved when this image was built."
        )
        progress(f"locked {len(lock.entries)} distributions in {path}: {_listed(lock)}")
    _write_atomic(path, lock.text(header))
    return path


def _listed(lock: Lock) -> str:
    return ", ".join(f"{n}=={v}" for n, v in lock.pins().items()) or "nothing"


def ensure_wheelhouse(packages: PackageSet, cache_dir: Path, progress: Progress = _quiet) -> Path:
    """The wheels of the set's lock, downloaded once and checked against its hashes."""
    path = cache_dir / f"wheels-{packages.digest}"
    if _marker(path).exists():
        return path
    lock = ensure_lock(packages, cache_dir, progress)
    partial = _fresh(path)
    partial.mkdir()
    if parse_lock(lock.read_text(encoding="utf-8"), str(lock)).entries:
        progress(f"pip download -r {lock} (wheels for python {SANDBOX_PYTHON}, hashes checked)")
        args = ["download", "-q", "--require-hashes", "--no-deps", *target_args()]
        _pip([*args, "-d", str(partial), "-r", str(lock)], "pip download")
    return _publish(partial, path)


def ensure_site(packages: PackageSet, cache_dir: Path, progress: Progress = _quiet) -> Path:
    """The set's lock installed into a plain directory (``/opt/sandbox-site`` in the sandbox)."""
    path = cache_dir / f"site-{packages.digest}"
    if _marker(path).exists():
        progress(f"package set {packages.name} cached at {path}")
        return path
    wheels = ensure_wheelhouse(packages, cache_dir, progress)
    lock = ensure_lock(packages, cache_dir, progress)
    partial = _fresh(path)
    partial.mkdir()
    if parse_lock(lock.read_text(encoding="utf-8"), str(lock)).entries:
        progress(f"installing {len(list(wheels.iterdir()))} wheels into {partial} (offline)")
        # --isolated: the host's pip config and its constraints do not apply to the sandbox.
        # The hashes are checked again: the wheelhouse is a directory anyone with the cache's
        # permissions could have written to since it was downloaded.
        args = ["--isolated", "install", "-q", "--no-index", "--find-links", str(wheels)]
        args += ["--require-hashes", "--no-deps", "--no-warn-conflicts"]
        args += ["--no-warn-script-location", *target_args()]
        _pip([*args, "--target", str(partial), "-r", str(lock)], "pip install")
        # Console scripts name the host's interpreter; the sandbox imports, it runs no scripts.
        shutil.rmtree(partial / "bin", ignore_errors=True)
    for p in [partial, *partial.rglob("*")]:
        # Readable by the sandbox's unprivileged uid whatever the umask was.
        p.chmod((p.stat().st_mode | 0o444 | (0o111 if p.is_dir() else 0)) & 0o7777)
    return _publish(partial, path)


def installed_lock(packages: PackageSet, cache_dir: Path) -> Lock | None:
    """The lock a build of ``packages`` installed here, None where none was."""
    path = lock_path(packages, cache_dir)
    try:
        return parse_lock(path.read_text(encoding="utf-8"), str(path))
    except (OSError, SandboxError):
        return None


def installed(paths: list[str]) -> dict[str, str]:
    """Distribution name -> version of everything in these directories of installed trees;
    where two hold one name, the first directory's, as on ``sys.path``."""
    found: dict[str, str] = {}
    for dist in metadata.distributions(path=paths):
        found.setdefault(canonicalize_name(dist.metadata["Name"]), dist.version)
    return found
