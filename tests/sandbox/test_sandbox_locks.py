"""Package sets locked whole with hashes (#46, finding 8): the committed locks, the tag that
digests them, a wheel whose bytes are not the lock's refused at download and at install, a
dependency the lock lacks never fetched, ``[sandbox] packages`` resolved into a lock beside
the build, and two builds of one lock giving the same manifest.

No image is built and no package index is reached: pip runs for real, against a local
directory of tiny wheels made here (``PIP_NO_INDEX``, ``PIP_FIND_LINKS``).
"""

from __future__ import annotations

import hashlib
import json
import zipfile
from pathlib import Path

import pytest

from codegen.sandbox import DEFAULT_IMAGE, SandboxError
from codegen.sandbox.image import NAMED_SETS, PackageSet, image_tag, package_set, wheelhouse
from codegen.sandbox.image.lock import Lock, Locked, committed_lock, make_lock, parse_lock
from codegen.sandbox.image.packages import manifest_path, write_manifest
from codegen.sandbox.image.wheelhouse import (
    ensure_lock,
    ensure_site,
    ensure_wheelhouse,
    installed,
    installed_lock,
    lock_from_report,
)


def make_wheel(directory: Path, name: str, version: str, requires: tuple[str, ...] = ()) -> Path:
    """A pure-Python wheel of one module, ``name``, that says ``version`` when imported."""
    path = directory / f"{name}-{version}-py3-none-any.whl"
    info = f"{name}-{version}.dist-info"
    metadata = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
    metadata += "".join(f"Requires-Dist: {r}\n" for r in requires)
    files = {
        f"{name}.py": f"VERSION = {version!r}\n",
        f"{info}/METADATA": metadata,
        f"{info}/WHEEL": "Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = "".join(f"{p},,\n" for p in files) + f"{info}/RECORD,,\n"
    with zipfile.ZipFile(path, "w") as zf:
        for arc, text in {**files, f"{info}/RECORD": record}.items():
            zf.writestr(zipfile.ZipInfo(arc, (2020, 1, 1, 0, 0, 0)), text)
    return path


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def index(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A directory pip takes wheels from, and no other source."""
    found = tmp_path / "index"
    found.mkdir()
    monkeypatch.setenv("PIP_CONFIG_FILE", "/dev/null")
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(found))
    return found


def tiny_set(index: Path) -> PackageSet:
    """``tinypkg`` (which asks for ``otherpkg``, not locked) locked by its hash."""
    wheel = make_wheel(index, "tinypkg", "1.0", requires=("otherpkg",))
    make_wheel(index, "otherpkg", "2.0")
    lock = make_lock([Locked("tinypkg", "1.0", (sha256(wheel),))])
    return PackageSet("tiny", ("tinypkg==1.0",), lock)


# -- the committed locks ---------------------------------------------------------------------
@pytest.mark.parametrize("set_name", sorted(NAMED_SETS))
def test_each_named_set_is_locked_whole_with_hashes(set_name: str) -> None:
    lock = committed_lock(set_name)
    pins = lock.pins()
    for text in NAMED_SETS[set_name]:  # every top-level pin, as the set says
        name, version = text.split("==")
        assert pins.get(name) == version, (set_name, text)
    assert all(len(e.sha256) >= 1 for e in lock.entries)
    if set_name == "none":
        assert lock.entries == ()
    else:  # transitive distributions too: the ones a build once chose on its own
        assert {"python-dateutil", "pytz", "tzdata"} <= set(pins)
    assert package_set(set_name).lock == lock


def test_the_tag_digests_the_lock_so_a_transitive_pin_is_a_new_image() -> None:
    default = package_set()
    assert image_tag(default) == DEFAULT_IMAGE and default.digest == default.lock.digest[:12]
    moved = [
        Locked(e.name, "2.9.0" if e.name == "python-dateutil" else e.version, e.sha256)
        for e in default.lock.entries
    ]
    other = PackageSet("default", default.requirements, make_lock(moved))
    assert other.requirements == default.requirements  # the top-level list is the same
    assert image_tag(other) != DEFAULT_IMAGE
    rehashed = [Locked(e.name, e.version, ("0" * 64,)) for e in default.lock.entries]
    assert PackageSet("default", default.requirements, make_lock(rehashed)).digest != (
        default.digest
    )
    # A comment is not the lock; an extra requirement is a new image; one the set already
    # pins as written is the same set.
    assert parse_lock("# edited\n" + default.lock.text(), "x").digest == default.lock.digest
    assert package_set("default", ["six==1.16.0"]).digest != default.digest
    assert package_set("default", ["Pandas==2.2.3"]) == default


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("numpy==1.26.4\n", "no --hash=sha256:"),
        ("numpy>=1.26 --hash=sha256:" + "a" * 64 + "\n", "not one name==version pin"),
        ("numpy==1.26.4 --hash=md5:abc\n", "no --hash=sha256:"),
        ("-r other.txt --hash=sha256:" + "a" * 64 + "\n", "only name==version"),
        (
            "numpy==1.26.4 --hash=sha256:" + "a" * 64 + "\n" + "NumPy==1.26.4 \\\n"
            "    --hash=sha256:" + "b" * 64 + "\n",
            "numpy is locked twice",
        ),
    ],
)
def test_a_lock_that_pins_less_than_everything_is_refused(text: str, said: str) -> None:
    with pytest.raises(SandboxError, match=said) as caught:
        parse_lock(text, "locks/x.txt")
    assert "\n" not in str(caught.value) and str(caught.value).startswith("locks/x.txt")


def test_a_lock_reads_back_as_written() -> None:
    lock = make_lock(
        [Locked("b-dist", "1.0", ("a" * 64, "c" * 64)), Locked("a", "2.0rc1", ("b" * 64,))]
    )
    assert [e.name for e in lock.entries] == ["a", "b-dist"]
    assert parse_lock(lock.text("a header\nof two lines"), "x") == lock


def test_a_stale_lock_is_refused_at_build_time(tmp_path: Path) -> None:
    stale = PackageSet("default", ("numpy==2.0.0", "pandas==2.2.3"), package_set().lock)
    with pytest.raises(SandboxError, match=r"does not lock numpy==2\.0\.0 .*make sandbox-locks"):
        ensure_lock(stale, tmp_path)


# -- the build installs the lock, hashes enforced --------------------------------------------
def test_the_build_installs_exactly_the_lock(index: Path, tmp_path: Path) -> None:
    packages = tiny_set(index)
    site = ensure_site(packages, tmp_path / "cache")
    assert installed([str(site)]) == {"tinypkg": "1.0"}  # otherpkg: not locked, not fetched
    assert installed_lock(packages, tmp_path / "cache") == packages.lock


def test_a_tampered_wheel_is_refused_at_download(index: Path, tmp_path: Path) -> None:
    packages = tiny_set(index)
    make_wheel(index, "tinypkg", "1.0", requires=("evil",)).write_bytes(
        (index / "tinypkg-1.0-py3-none-any.whl").read_bytes() + b"\0"
    )
    with pytest.raises(SandboxError, match=r"pip download failed.*(HASH|hash)") as caught:
        ensure_wheelhouse(packages, tmp_path / "cache")
    assert "\n" not in str(caught.value)


def test_a_wheel_tampered_in_the_wheelhouse_is_refused_at_install(
    index: Path, tmp_path: Path
) -> None:
    packages = tiny_set(index)
    wheels = ensure_wheelhouse(packages, tmp_path / "cache")
    (wheel,) = wheels.iterdir()
    with zipfile.ZipFile(wheel, "a") as zf:
        zf.writestr("tinypkg_planted.py", "print('planted')\n")
    with pytest.raises(SandboxError, match=r"pip install failed.*(HASH|hash)"):
        ensure_site(packages, tmp_path / "cache")
    assert not (tmp_path / "cache" / f"site-{packages.digest}.complete").exists()


def test_two_builds_of_one_lock_give_the_same_manifest(index: Path, tmp_path: Path) -> None:
    packages = tiny_set(index)
    manifests = []
    for build in ("one", "two"):
        cache = tmp_path / build
        site = ensure_site(packages, cache)
        tag = image_tag(packages)
        lock = installed_lock(packages, cache)
        write_manifest(cache, tag, packages, installed([str(site)]), lock)
        manifests.append(manifest_path(cache, tag).read_text(encoding="utf-8"))
    assert manifests[0] == manifests[1]
    record = json.loads(manifests[0])
    assert record["lock"] == packages.lock.digest and record["distributions"] == {"tinypkg": "1.0"}


def test_the_first_of_two_installed_copies_is_the_one_listed(tmp_path: Path) -> None:
    """As on sys.path: the set's site dir before Debian's, whose older copy an import skips."""
    for where, version in (("first", "2.0"), ("second", "1.0")):
        (tmp_path / where).mkdir()
        with zipfile.ZipFile(make_wheel(tmp_path, "dup", version)) as zf:
            zf.extractall(tmp_path / where)
    assert installed([str(tmp_path / "first"), str(tmp_path / "second")]) == {"dup": "2.0"}


# -- [sandbox] packages: resolved into a lock at build time ------------------------------------
def test_extra_packages_are_resolved_into_a_lock_beside_the_build(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked: list[list[str]] = []
    resolved = make_lock([Locked("six", "1.16.0", ("a" * 64,)), *package_set().lock.entries])

    def resolve_lock(requirements: list[str], *, isolated: bool = False) -> Lock:
        asked.append(list(requirements))
        return resolved

    monkeypatch.setattr(wheelhouse, "resolve_lock", resolve_lock)
    custom = package_set("default", ["six==1.16.0"])
    said: list[str] = []
    path = ensure_lock(custom, tmp_path, said.append)
    # The set's own pins, transitive ones included, hold; the extra is added to them.
    assert asked == [[*(f"{n}=={v}" for n, v in package_set().lock.pins().items()), "six==1.16.0"]]
    assert path.parent == tmp_path / "locks" and custom.digest in path.name
    assert parse_lock(path.read_text(encoding="utf-8"), str(path)) == resolved
    assert any(str(path) in line and "six==1.16.0" in line for line in said)  # shown
    assert ensure_lock(custom, tmp_path) == path and len(asked) == 1  # resolved once


def test_a_pip_report_becomes_a_lock() -> None:
    report = {
        "install": [
            {
                "metadata": {"name": "Python_Dateutil", "version": "2.9.0"},
                "download_info": {"archive_info": {"hashes": {"sha256": "a" * 64}}},
            },
            {"metadata": {"name": "six", "version": "1.16.0"}, "download_info": {"url": "x"}},
        ]
    }
    lock = lock_from_report(report, lambda name, version: f"{name}-{version}".ljust(64, "0"))
    assert lock.pins() == {"python-dateutil": "2.9.0", "six": "1.16.0"}
    assert lock.entries[1].sha256 == ("six-1.16.0".ljust(64, "0"),)


def test_where_the_image_is_not_built_here_the_lock_says_what_it_will_have(
    tmp_path: Path,
) -> None:
    from codegen.sandbox.image import missing_distributions, sandbox_distributions

    listed = {d.name: d.version for d in sandbox_distributions("unbuilt", package_set(), tmp_path)}
    assert listed == package_set().lock.pins()  # python-dateutil, pytz, tzdata too
    have = sandbox_distributions("unbuilt", package_set("default", ["six"]), tmp_path)
    assert missing_distributions(["python-dateutil", "six", "gensim"], have) == ["gensim"]


def test_a_named_sets_lock_beside_the_build_is_the_committed_one(tmp_path: Path) -> None:
    default = package_set()
    path = ensure_lock(default, tmp_path)
    path.write_text(path.read_text().replace("pandas==2.2.3", "pandas==2.2.2"))
    assert ensure_lock(default, tmp_path) == path and installed_lock(default, tmp_path) == (
        default.lock
    )
