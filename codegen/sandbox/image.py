"""Building the sandbox image, online (public Python base) or offline (Debian packages).

Offline: ``debootstrap --variant=minbase --include=python3,python3-pytest bookworm DIR``, cached
under the cache dir so a second build is fast; ``docker import`` of that directory as the base
image; then ``codegen/sandbox/Dockerfile`` on top of it (the same pytest and user layers as online).
The debootstrapped directory doubles as the read-only root of the bubblewrap backend.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable
from importlib import resources
from pathlib import Path

from codegen.sandbox.errors import SandboxError, SandboxUnavailable

SUITE = "bookworm"
MIRROR = "http://deb.debian.org/debian"
BASE_TAG = f"multiagent-codegen-sandbox-base:{SUITE}"
PACKAGES = ("python3", "python3-pytest")
# The backend name of a bubblewrap sandbox on the host's /usr (no debootstrapped root).
HOST_BACKEND = "bwrap-host"

Progress = Callable[[str], None]


def _quiet(_: str) -> None:
    pass


def default_cache_dir() -> Path:
    """World-traversable for root (bubblewrap drops to an unprivileged uid), else XDG."""
    explicit = os.environ.get("CODEGEN_SANDBOX_CACHE")
    if explicit:
        return Path(explicit)
    if os.geteuid() == 0:
        return Path("/var/cache/multiagent-codegen/sandbox")
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(xdg) / "multiagent-codegen" / "sandbox"


def rootfs_path(cache_dir: Path | None = None) -> Path:
    return (cache_dir or default_cache_dir()) / f"rootfs-{SUITE}"


def rootfs_ready(path: Path) -> bool:
    # The marker sits beside the tree, not in it: the tree is mounted as the sandbox's root.
    return path.with_name(path.name + ".complete").exists()


def backend_label(backend: str, host_usr: bool, cache_dir: Path | None = None) -> str:
    """The configured backend as ``codegen info`` shows it: where bubblewrap would bind the
    host's /usr (no debootstrapped root, ``host_usr`` set), the name its results carry."""
    if backend == "docker" or not host_usr or rootfs_ready(rootfs_path(cache_dir)):
        return backend
    return HOST_BACKEND if backend == "bwrap" else f"{backend} ({HOST_BACKEND} without Docker)"


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
    return resources.files("codegen.sandbox").joinpath("Dockerfile").read_text("utf-8")


def build_image(
    tag: str,
    *,
    offline: bool,
    force: bool = False,
    cache_dir: Path | None = None,
    progress: Progress = _quiet,
) -> str:
    """Build ``tag`` unless it exists (``force`` rebuilds); returns the tag."""
    import io

    from codegen.sandbox.docker_backend import docker_client

    client = docker_client(timeout=600)
    try:
        rootfs = ensure_rootfs(cache_dir, progress=progress) if offline else None
        if image_exists(client, tag) and not force:
            progress(f"image {tag} already exists")
            return tag
        buildargs = {}
        if rootfs is not None:
            buildargs["BASE"] = import_base(client, rootfs, progress)
        progress(f"building {tag} from codegen/sandbox/Dockerfile")
        try:
            client.images.build(
                fileobj=io.BytesIO(dockerfile_text().encode()),
                tag=tag,
                buildargs=buildargs,
                rm=True,
                forcerm=True,
                pull=False,
                network_mode="none" if offline else None,
                labels={"multiagent-codegen.sandbox.image": tag},
            )
        except Exception as exc:
            raise SandboxError(f"building {tag} failed: {exc}") from exc
        return tag
    finally:
        client.close()
