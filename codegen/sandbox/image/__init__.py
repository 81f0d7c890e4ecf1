"""The sandbox's image and bubblewrap root: the package set its python3 can import and the
tag named after it (packages.py), the wheelhouse that installs the set (wheelhouse.py), and
the build, online or offline, with the Dockerfile beside it (build.py).

Code outside this room imports it from here; its modules import each other directly.
"""

from __future__ import annotations

from codegen.sandbox.image.build import (
    HOST_BACKEND,
    build_image,
    bwrap_root,
    docker_client,
    ensure_image_rootfs,
    ensure_rootfs,
    image_exists,
    image_rootfs_path,
    import_base,
    rootfs_path,
    rootfs_ready,
)
from codegen.sandbox.image.packages import (
    DEFAULT_SET,
    NAMED_SETS,
    Distribution,
    PackageSet,
    build_command,
    default_cache_dir,
    image_tag,
    missing_distributions,
    package_set,
    sandbox_distributions,
)

__all__ = [
    "DEFAULT_SET",
    "HOST_BACKEND",
    "NAMED_SETS",
    "Distribution",
    "PackageSet",
    "build_command",
    "build_image",
    "bwrap_root",
    "default_cache_dir",
    "docker_client",
    "ensure_image_rootfs",
    "ensure_rootfs",
    "image_exists",
    "image_rootfs_path",
    "image_tag",
    "import_base",
    "missing_distributions",
    "package_set",
    "rootfs_path",
    "rootfs_ready",
    "sandbox_distributions",
]
