"""The sandbox's Python package set: which third-party distributions its python3 can import.

A set is a named list of requirements (``[sandbox] package_set``) plus extra ones
(``[sandbox] packages``). Each named set is locked whole, with hashes, in a committed file
(``lock.py``, ``locks/<set>.txt``); extra requirements are resolved into a lock of their own when
the image is built. The lock is installed into the image and the bubblewrap root when they are
built (``codegen sandbox build``, from a wheelhouse made then: ``wheelhouse.py``), never at run
time: the sandbox has no network. The image tag carries a digest of the lock (and of the extra
requirements), so a changed pin, transitive ones included, is a new image, built once and then
cached.

The named sets pin exact versions so that a tag means one environment. numpy stays below 2.0
in both: ClassEval's reference solutions (KappaCalculator) assume numpy 1's scalar types, and
gensim 4.3's wheel requires numpy < 2 (with scipy < 1.14); the default set takes the same
numpy and pandas so that the two sets agree on what they share.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from codegen.sandbox.errors import SandboxError
from codegen.sandbox.image.lock import Lock, committed_lock

# Debian bookworm's python3 (the debootstrapped root) and python:3.11-slim (the online base).
SANDBOX_PYTHON = "3.11"
IMAGE_REPO = "multiagent-codegen-sandbox"
# Bump when codegen/sandbox/image/Dockerfile or the layout of the package layer changes.
IMAGE_VERSION = "2"

NAMED_SETS: dict[str, tuple[str, ...]] = {
    "none": (),
    "default": ("numpy==1.26.4", "pandas==2.2.3"),
    # Every third-party import of ClassEval's 100 tasks and tests (scipy: gensim's own pin).
    "classeval": (
        "beautifulsoup4==4.12.3",
        "gensim==4.3.3",
        "nltk==3.9.1",
        "numpy==1.26.4",
        "openpyxl==3.1.5",
        "pandas==2.2.3",
        "pillow==10.4.0",
        "pypdf2==3.0.1",
        "python-docx==1.1.2",
        "reportlab==4.2.5",
        "scipy==1.13.1",
    ),
}
DEFAULT_SET = "default"


@dataclass(frozen=True)
class PackageSet:
    """A set's name and its requirements, normalized (PEP 503 names) and sorted; the named
    set's committed lock, and the ``[sandbox] packages`` that are not in it (``extra``: the
    build resolves the set's pins plus these into a lock of their own)."""

    name: str
    requirements: tuple[str, ...]
    lock: Lock = field(default_factory=Lock)
    extra: tuple[str, ...] = ()

    @property
    def digest(self) -> str:
        """Of the lock, and of the extra requirements the build will lock with it."""
        text = self.lock.body() + "".join(f"extra {r}\n" for r in self.extra)
        return hashlib.sha256(text.encode()).hexdigest()[:12]

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(Requirement(r).name for r in self.requirements)

    def describe(self) -> str:
        """One line for ``codegen info`` and logs: the name, the pinned list and its lock."""
        listed = ", ".join(self.requirements) or "no third-party packages"
        locked = f"{len(self.lock.entries)} distributions locked"
        if self.extra:
            locked += f", {', '.join(self.extra)} resolved into the lock at build time"
        return f"{self.name}: {listed}; {locked}" if self.requirements else f"{self.name}: {listed}"


@dataclass(frozen=True)
class Distribution:
    """An installed (or, before the build, declared) distribution of the sandbox's Python."""

    name: str  # PEP 503-normalized, e.g. "python-docx"
    version: str | None  # None: declared without a pin and not built on this machine yet


def _normalize(text: str) -> Requirement:
    try:
        req = Requirement(text)
    except InvalidRequirement as exc:
        why = str(exc).splitlines()[0]  # packaging adds the text and a caret on more lines
        raise SandboxError(f"[sandbox] packages: {text!r} is not a requirement: {why}") from None
    if req.url or req.marker:
        raise SandboxError(
            f"[sandbox] packages: {text!r}: only names, extras and versions (the wheels "
            "come from the package index at build time)"
        )
    req.name = canonicalize_name(req.name)
    return req


@cache
def named_lock(name: str) -> Lock:
    """The committed lock of named set ``name`` (empty where there is none yet: the build then
    refuses, naming the command that makes it)."""
    return committed_lock(name)


def package_set(name: str = DEFAULT_SET, extra: list[str] | tuple[str, ...] = ()) -> PackageSet:
    """The named set plus ``extra`` requirements (one of the same name replaces the set's)."""
    if name not in NAMED_SETS:
        raise SandboxError(
            f"[sandbox] package_set: unknown set {name!r}; choose one of {sorted(NAMED_SETS)}"
        )
    chosen = {r.name: r for r in map(_normalize, NAMED_SETS[name])}
    # One the set already pins as written adds nothing: the same set, the same image.
    added = [r for r in map(_normalize, extra) if str(r) != str(chosen.get(r.name, ""))]
    for req in added:
        chosen[req.name] = req
    requirements = tuple(sorted(str(r) for r in chosen.values()))
    if not added:
        return PackageSet(name, requirements, named_lock(name))
    names = {r.name for r in added}
    extras = tuple(r for r in requirements if Requirement(r).name in names)
    return PackageSet(f"{name}-custom", requirements, named_lock(name), extras)


def build_command(set_name: str = DEFAULT_SET) -> str:
    """The command that builds the image (and bubblewrap root) of the named set, as a message
    prints it: run as printed, it builds what the command that printed it looks for."""
    chosen = "" if set_name == DEFAULT_SET else f" --package-set {set_name}"
    return f"codegen sandbox build --offline{chosen}"


def image_tag(packages: PackageSet) -> str:
    """The image (and bubblewrap root) of this set: its name and the digest of its list."""
    return f"{IMAGE_REPO}:{IMAGE_VERSION}-{packages.name}-{packages.digest}"


def is_packaged_tag(tag: str) -> bool:
    """A tag ``image_tag`` made (its bubblewrap root is built beside the image)."""
    return (
        re.fullmatch(rf"{re.escape(IMAGE_REPO)}:{IMAGE_VERSION}-[a-z0-9-]+-[0-9a-f]{{12}}", tag)
        is not None
    )


# Here rather than in build.py, which imports this module: the manifest lives under it too.
def default_cache_dir() -> Path:
    """World-traversable for root (bubblewrap drops to an unprivileged uid), else XDG."""
    explicit = os.environ.get("CODEGEN_SANDBOX_CACHE")
    if explicit:
        return Path(explicit)
    if os.geteuid() == 0:
        return Path("/var/cache/multiagent-codegen/sandbox")
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(xdg) / "multiagent-codegen" / "sandbox"


def manifest_path(cache_dir: Path, tag: str) -> Path:
    return cache_dir / "manifests" / (re.sub(r"[^A-Za-z0-9_.-]", "_", tag) + ".json")


def write_manifest(
    cache_dir: Path, tag: str, packages: PackageSet, installed: dict[str, str], lock: Lock | None
) -> None:
    """What image ``tag`` holds: the set, the sha256 of the lock it was built from (None: not
    built from a lock here) and every distribution its python3 sees. Nothing in it depends on
    when or where it was built, so two builds of one tag write the same file."""
    path = manifest_path(cache_dir, tag)
    path.parent.mkdir(parents=True, exist_ok=True)
    record = {"tag": tag, "set": packages.name, "requirements": list(packages.requirements)}
    record["lock"] = lock.digest if lock is not None else None
    record["distributions"] = dict(sorted(installed.items()))
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    tmp.replace(path)


def sandbox_distributions(
    tag: str, packages: PackageSet, cache_dir: Path | None = None
) -> tuple[Distribution, ...]:
    """The distributions the sandbox's python3 has, sorted by name.

    Where image ``tag`` was built on this machine: every distribution found in it (the set,
    what it pulled in, pytest and its own). Elsewhere: the set's lock (transitive pins
    included) and its extra requirements as declared (a pinned version, or None), which leaves
    out what the extra ones pull in and the base image's own.
    """
    path = manifest_path(cache_dir or default_cache_dir(), tag)
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        record = None
    if isinstance(record, dict) and record.get("requirements") == list(packages.requirements):
        found = record.get("distributions") or {}
        return tuple(Distribution(n, str(v)) for n, v in sorted(found.items()))
    declared = {n: Distribution(n, v) for n, v in packages.lock.pins().items()}
    for text in packages.requirements:
        req = Requirement(text)
        pins = [s.version for s in req.specifier if s.operator in ("==", "===")]
        if text in packages.extra or req.name not in declared:
            declared[req.name] = Distribution(req.name, pins[0] if len(pins) == 1 else None)
    return tuple(declared[name] for name in sorted(declared))


def missing_distributions(
    wanted: list[str] | tuple[str, ...], available: tuple[Distribution, ...]
) -> list[str]:
    """The names in ``wanted`` (distribution names as a spec gives them) the sandbox lacks."""
    have = {d.name for d in available}
    return [name for name in wanted if canonicalize_name(name) not in have]
