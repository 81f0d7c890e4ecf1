"""The wheelhouse of a package set and the installed tree made from it, for the sandbox's python3.

At build time only: ``pip download`` fetches binary wheels for the sandbox's Python (CPython
3.11 on glibc 2.36, Debian bookworm; not the host's) from the package index pip is configured
with, then ``pip install --no-index --target`` unpacks them, offline, into a plain directory
that the image and the bubblewrap root both mount as ``/opt/sandbox-site``. Both are cached
under the sandbox cache dir by the set's digest, with a marker written last, so a second
build does nothing and an interrupted one starts that step again.
"""

from __future__ import annotations

import platform
import shutil
import subprocess
import sys
from collections.abc import Callable
from importlib import metadata
from pathlib import Path

from packaging.utils import canonicalize_name

from codegen.sandbox.errors import SandboxError
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


def ensure_wheelhouse(packages: PackageSet, cache_dir: Path, progress: Progress = _quiet) -> Path:
    """The set's wheels (and their dependencies'), downloaded once."""
    path = cache_dir / f"wheels-{packages.digest}"
    if _marker(path).exists():
        return path
    partial = _fresh(path)
    partial.mkdir()
    if packages.requirements:
        progress(
            f"pip download {' '.join(packages.requirements)} (wheels for python {SANDBOX_PYTHON})"
        )
        _pip(
            ["download", "-q", *target_args(), "-d", str(partial), *packages.requirements],
            "pip download",
        )
    return _publish(partial, path)


def ensure_site(packages: PackageSet, cache_dir: Path, progress: Progress = _quiet) -> Path:
    """The set installed into a plain directory (``/opt/sandbox-site`` in the sandbox)."""
    path = cache_dir / f"site-{packages.digest}"
    if _marker(path).exists():
        progress(f"package set {packages.name} cached at {path}")
        return path
    wheels = ensure_wheelhouse(packages, cache_dir, progress)
    partial = _fresh(path)
    partial.mkdir()
    if packages.requirements:
        progress(f"installing {len(list(wheels.iterdir()))} wheels into {partial} (offline)")
        # --isolated: the host's pip config and its constraints do not apply to the sandbox.
        args = ["--isolated", "install", "-q", "--no-index", "--find-links", str(wheels)]
        args += ["--no-warn-conflicts", "--no-warn-script-location", *target_args()]
        _pip([*args, "--target", str(partial), *packages.requirements], "pip install")
        # Console scripts name the host's interpreter; the sandbox imports, it runs no scripts.
        shutil.rmtree(partial / "bin", ignore_errors=True)
    for p in [partial, *partial.rglob("*")]:
        # Readable by the sandbox's unprivileged uid whatever the umask was.
        p.chmod((p.stat().st_mode | 0o444 | (0o111 if p.is_dir() else 0)) & 0o7777)
    return _publish(partial, path)


def installed(paths: list[str]) -> dict[str, str]:
    """Distribution name -> version of everything in these directories of installed trees."""
    found: dict[str, str] = {}
    for dist in metadata.distributions(path=paths):
        found[canonicalize_name(dist.metadata["Name"])] = dist.version
    return found
