"""Building the sandbox image, online (public Python base) or offline (Debian packages).

Offline: ``debootstrap --variant=minbase --include=python3,python3-pytest bookworm DIR``, cached
under the cache dir so a second build is fast; ``docker import`` of that directory as the base
image; then the Dockerfile beside this module on top of it (the same pytest and user layers as
online).
The debootstrapped directory is the base of the bubblewrap backend's read-only root.

The package set (``packages.py``) is part of both: the wheels of its lock (``lock.py``) are
downloaded and installed, hashes checked, into a plain directory at build time
(``wheelhouse.py``), which the Dockerfile copies into the
image and which is hard-linked, with a hard-linked copy of the debootstrapped tree, into a
bubblewrap root of its own, named after the image tag (``rootfs-<tag>``): one tag, one
environment on both backends.
"""

from __future__ import annotations

import contextlib
import fcntl
import io
import json
import os
import re
import shutil
import subprocess
import tarfile
import tempfile
from collections.abc import Callable, Iterator
from importlib import resources
from pathlib import Path
from typing import IO, TYPE_CHECKING

if TYPE_CHECKING:
    import docker

from codegen.sandbox.errors import SandboxError, SandboxUnavailable
from codegen.sandbox.image.packages import (
    DEFAULT_SET,
    SANDBOX_PYTHON,
    PackageSet,
    build_command,
    default_cache_dir,
    is_packaged_tag,
    manifest_path,
    package_set,
    write_manifest,
)
from codegen.sandbox.image.wheelhouse import (
    PTH_NAME,
    SITE_MOUNT,
    ensure_site,
    installed,
    installed_lock,
)

SUITE = "bookworm"
MIRROR = "http://deb.debian.org/debian"
BASE_TAG = f"multiagent-codegen-sandbox-base:{SUITE}"
PACKAGES = ("python3", "python3-pytest")
# The backend name of a bubblewrap sandbox on the host's /usr (no debootstrapped root).
HOST_BACKEND = "bwrap-host"

Progress = Callable[[str], None]


def _quiet(_: str) -> None:
    pass


def rootfs_path(cache_dir: Path | None = None) -> Path:
    return (cache_dir or default_cache_dir()) / f"rootfs-{SUITE}"


def rootfs_ready(path: Path) -> bool:
    # The marker sits beside the tree, not in it: the tree is mounted as the sandbox's root.
    return path.with_name(path.name + ".complete").exists()


def image_rootfs_path(tag: str, cache_dir: Path | None = None) -> Path:
    """The bubblewrap root built beside image ``tag`` (its package set included)."""
    name = re.sub(r"[^A-Za-z0-9_.-]", "_", tag)
    return (cache_dir or default_cache_dir()) / f"rootfs-{name}"


def bwrap_root(tag: str, cache_dir: Path | None = None, set_name: str = DEFAULT_SET) -> Path | None:
    """The root bubblewrap mounts for image ``tag``: the one built beside it; else None (the
    plain debootstrapped root, or the host's /usr where that is allowed). Refuses a tag this
    module names after a package set when only the plain root is there: code that imports the
    set must not meet a root without it."""
    path = image_rootfs_path(tag, cache_dir)
    if rootfs_ready(path):
        return path
    if is_packaged_tag(tag) and rootfs_ready(rootfs_path(cache_dir)):
        raise SandboxUnavailable(
            f"the sandbox root of {tag} (its package set) is not built; "
            f"run '{build_command(set_name)}'"
        )
    return None


def ensure_rootfs(
    cache_dir: Path | None = None, mirror: str = MIRROR, progress: Progress = _quiet
) -> Path:
    """The cached debootstrapped root file system, created on first use (a few minutes)."""
    path = rootfs_path(cache_dir)
    if rootfs_ready(path):
        progress(f"root file system cached at {path}")
        return path
    if shutil.which("debootstrap") is None:
        raise SandboxUnavailable("debootstrap is not installed (apt-get install debootstrap)")
    if os.geteuid() != 0:
        raise SandboxUnavailable("an offline build runs debootstrap, which needs root")
    partial = path.with_name(path.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.parent.mkdir(parents=True, exist_ok=True)
    os.chmod(partial.parent, 0o755)
    progress(f"debootstrap {SUITE} into {partial} (a few minutes)")
    cmd = [
        "debootstrap",
        "--variant=minbase",
        f"--include={','.join(PACKAGES)}",
        SUITE,
        str(partial),
        mirror,
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        tail = " ".join((proc.stdout + proc.stderr).split()[-40:])
        raise SandboxError(f"debootstrap failed (exit {proc.returncode}): {tail}")
    (partial / "work").mkdir(exist_ok=True)  # the bubblewrap work dir's mount point
    shutil.rmtree(path, ignore_errors=True)
    partial.rename(path)
    path.with_name(path.name + ".complete").touch()
    return path


# Here, below both the build and the Docker backend (backends/docker.py), which use it.
def docker_client(timeout: float = 60.0) -> docker.DockerClient:
    import docker

    try:
        client = docker.from_env(timeout=int(timeout))
        client.ping()
    except Exception as exc:
        raise SandboxUnavailable(f"no Docker daemon answers: {exc}") from exc
    return client


def image_exists(client: object, tag: str) -> bool:
    import docker.errors

    try:
        client.api.inspect_image(tag)  # type: ignore[attr-defined]
    except docker.errors.ImageNotFound:
        return False
    return True


def import_base(client: object, rootfs: Path, progress: Progress = _quiet) -> str:
    if image_exists(client, BASE_TAG):
        progress(f"base image {BASE_TAG} present")
        return BASE_TAG
    progress(f"docker import {rootfs} as {BASE_TAG}")
    repo, tag = BASE_TAG.split(":")
    tar = subprocess.Popen(
        ["tar", "--numeric-owner", "-C", str(rootfs), "-c", "."], stdout=subprocess.PIPE
    )
    try:
        client.api.import_image_from_stream(tar.stdout, repository=repo, tag=tag)  # type: ignore[attr-defined]
    finally:
        tar.stdout.close()  # type: ignore[union-attr]
        tar.wait()
    if tar.returncode != 0 or not image_exists(client, BASE_TAG):
        raise SandboxError(f"docker import of {rootfs} failed")
    return BASE_TAG


def dockerfile_text() -> str:
    return resources.files("codegen.sandbox.image").joinpath("Dockerfile").read_text("utf-8")


def ensure_packaged_rootfs(
    tag: str, base: Path, site: Path, cache_dir: Path | None = None, progress: Progress = _quiet
) -> Path:
    """The bubblewrap root of image ``tag``: hard links of the debootstrapped tree and of the
    installed set (nothing is copied, nothing is ever written through them), plus the .pth
    file that puts the set on python3's path, as the Dockerfile does in the image."""
    path = image_rootfs_path(tag, cache_dir)
    if rootfs_ready(path):
        progress(f"bubblewrap root of {tag} cached at {path}")
        return path
    partial = path.with_name(path.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    progress(f"bubblewrap root of {tag} at {path}")
    for cmd in (
        ["cp", "-a", "--link", str(base), str(partial)],
        ["cp", "-a", "--link", str(site), str(partial) + SITE_MOUNT],
    ):
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            raise SandboxError(f"{' '.join(cmd[:3])} failed: {proc.stderr.strip()[-300:]}")
    # A new file in a new directory: the hard-linked files of the base stay untouched.
    site_dir = partial / f"usr/local/lib/python{SANDBOX_PYTHON}/dist-packages"
    site_dir.mkdir(parents=True, exist_ok=True)
    (site_dir / PTH_NAME).write_text(SITE_MOUNT + "\n", encoding="utf-8")
    (site_dir / PTH_NAME).chmod(0o644)
    shutil.rmtree(path, ignore_errors=True)
    partial.rename(path)
    path.with_name(path.name + ".complete").touch()
    return path


def _write_context(site: Path, fileobj: IO[bytes]) -> None:
    """The build context: the Dockerfile and the installed set as ``site/``."""

    def as_root(info: tarfile.TarInfo) -> tarfile.TarInfo:
        info.uid = info.gid = 0
        info.uname = info.gname = "root"
        return info

    with tarfile.open(fileobj=fileobj, mode="w") as tar:
        text = dockerfile_text().encode()
        info = tarfile.TarInfo("Dockerfile")
        info.size = len(text)
        tar.addfile(as_root(info), io.BytesIO(text))
        tar.add(site, arcname="site", filter=as_root)
    fileobj.seek(0)


# Run inside the built image: every distribution its python3 sees, by normalized name; where
# two site dirs hold one name, the one first on sys.path (the one an import finds).
_LIST_DISTRIBUTIONS = (
    "import importlib.metadata as m, json, re; found = {}; "
    "[found.setdefault(re.sub(r'[-_.]+', '-', d.metadata['Name']).lower(), d.version) "
    "for d in m.distributions()]; print(json.dumps(found))"
)


def _record_distributions(
    client: object, tag: str, packages: PackageSet, cache_dir: Path | None
) -> None:
    out = client.containers.run(  # type: ignore[attr-defined]
        tag, ["python3", "-c", _LIST_DISTRIBUTIONS], network_disabled=True, remove=True
    )
    cache = cache_dir or default_cache_dir()
    lock = installed_lock(packages, cache)
    write_manifest(cache, tag, packages, json.loads(out), lock)


@contextlib.contextmanager
def _build_lock(cache_dir: Path | None) -> Iterator[None]:
    """One build at a time per cache dir (two test workers on a fresh machine, say): the
    steps rename finished directories into place and would race."""
    cache = cache_dir or default_cache_dir()
    cache.mkdir(parents=True, exist_ok=True)
    with open(cache / "build.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def ensure_image_rootfs(
    tag: str,
    packages: PackageSet,
    cache_dir: Path | None = None,
    progress: Progress = _quiet,
) -> Path:
    """Only the bubblewrap side of ``build_image(tag, offline=True)``: no Docker needed."""
    with _build_lock(cache_dir):
        return _ensure_image_rootfs(tag, packages, cache_dir, progress)


def _ensure_image_rootfs(
    tag: str, packages: PackageSet, cache_dir: Path | None, progress: Progress
) -> Path:
    base = ensure_rootfs(cache_dir, progress=progress)
    path = image_rootfs_path(tag, cache_dir)
    if not rootfs_ready(path):
        site = ensure_site(packages, cache_dir or default_cache_dir(), progress)
        path = ensure_packaged_rootfs(tag, base, site, cache_dir, progress)
    cache = cache_dir or default_cache_dir()
    if not manifest_path(cache, tag).exists():
        # What python3 sees in that root: its site dirs, the set's included.
        dirs = [f"usr/local/lib/python{SANDBOX_PYTHON}/dist-packages", SITE_MOUNT.lstrip("/")]
        dirs.append("usr/lib/python3/dist-packages")
        found = installed([str(path / d) for d in dirs])
        write_manifest(cache, tag, packages, found, installed_lock(packages, cache))
    return path


def build_image(
    tag: str,
    *,
    offline: bool,
    packages: PackageSet | None = None,
    force: bool = False,
    cache_dir: Path | None = None,
    progress: Progress = _quiet,
) -> str:
    """Build ``tag`` with ``packages`` (default: the default set) unless it exists (``force``
    rebuilds); offline, also the bubblewrap root beside it. Returns the tag."""
    packages = packages if packages is not None else package_set()
    with _build_lock(cache_dir):
        return _build_image(tag, offline, packages, force, cache_dir, progress)


def _build_image(
    tag: str,
    offline: bool,
    packages: PackageSet,
    force: bool,
    cache_dir: Path | None,
    progress: Progress,
) -> str:
    cache = cache_dir or default_cache_dir()
    client = docker_client(timeout=600)
    try:
        if offline:
            _ensure_image_rootfs(tag, packages, cache_dir, progress)
        # The wheels are fetched only when something is built from them: a second build of
        # the same set reaches no package index.
        if image_exists(client, tag) and not force:
            progress(f"image {tag} already exists")
            if not manifest_path(cache, tag).exists():
                _record_distributions(client, tag, packages, cache_dir)
            return tag
        site = ensure_site(packages, cache, progress)
        lock = installed_lock(packages, cache)
        buildargs = {}
        if offline:
            buildargs["BASE"] = import_base(client, rootfs_path(cache_dir), progress)
        progress(f"building {tag} from codegen/sandbox/image/Dockerfile with {packages.describe()}")
        try:
            with tempfile.TemporaryFile() as context:
                _write_context(site, context)
                client.images.build(
                    fileobj=context,
                    custom_context=True,
                    tag=tag,
                    buildargs=buildargs,
                    rm=True,
                    forcerm=True,
                    pull=False,
                    network_mode="none" if offline else None,
                    labels={
                        "multiagent-codegen.sandbox.image": tag,
                        "multiagent-codegen.sandbox.packages": " ".join(packages.requirements),
                        "multiagent-codegen.sandbox.lock": lock.digest if lock else "",
                    },
                )
        except Exception as exc:
            raise SandboxError(f"building {tag} failed: {exc}") from exc
        _record_distributions(client, tag, packages, cache_dir)
        return tag
    finally:
        client.close()
