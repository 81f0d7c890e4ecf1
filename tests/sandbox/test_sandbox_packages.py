"""The sandbox's package set: numpy and pandas importable on both backends under the default
limits, a module outside the set named in the error, the set in the image tag and in
``codegen info``, and a second build that reaches no package index."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path
from typing import Any

import pytest

from codegen.composition import sandbox_image, sandbox_packages
from codegen.orchestration.cli.info import sandbox_line
from codegen.sandbox import DEFAULT_IMAGE, Limits, SandboxError, SandboxUnavailable
from codegen.sandbox.api import Sandbox
from codegen.sandbox.image import (
    NAMED_SETS,
    build_image,
    bwrap_root,
    image_rootfs_path,
    image_tag,
    missing_distributions,
    package_set,
    sandbox_distributions,
)
from codegen.sandbox.image.wheelhouse import target_args
from codegen.settings import SandboxSettings

# The sandbox's own default limits (512 MB): what the package set has to work under.
DEFAULTS = Limits()

USES_BOTH = """
import numpy as np
import pandas as pd

frame = pd.DataFrame({"x": np.arange(1, 6), "y": np.linspace(0.0, 1.0, 5)})
product = np.random.default_rng(0).random((200, 200)) @ np.eye(200)
print(np.__version__, pd.__version__, frame["x"].mean(), frame["y"].sum(), product.shape)
"""

SOLUTION = """
import pandas as pd


def column_mean(rows, column):
    return float(pd.DataFrame(rows)[column].mean())
"""

TESTS = """
from solution import column_mean


def test_mean():
    assert column_mean([{"a": 1}, {"a": 3}], "a") == 2.0


def test_other_column():
    assert column_mean([{"a": 1, "b": 10}, {"a": 3, "b": 30}], "b") == 20.0
"""


def test_the_tag_names_the_set_and_changes_with_it() -> None:
    default = package_set()
    assert default.requirements == ("numpy==1.26.4", "pandas==2.2.3")
    assert image_tag(default) == DEFAULT_IMAGE
    assert re.fullmatch(r"multiagent-codegen-sandbox:2-default-[0-9a-f]{12}", DEFAULT_IMAGE)
    classeval = package_set("classeval")
    assert image_tag(classeval).startswith("multiagent-codegen-sandbox:2-classeval-")
    # Same set however it is written: names normalized, list sorted.
    same = package_set("none", ["Pandas==2.2.3", "NumPy==1.26.4"])
    assert same.requirements == default.requirements
    assert same.digest == package_set("none", ["numpy==1.26.4", "pandas==2.2.3"]).digest
    # ...but not the default set: that one is locked whole, these are resolved at build time.
    assert same.digest != default.digest and same.name == "none-custom"
    # An extra requirement replaces the set's pin of that name: a new digest, a new image.
    bumped = package_set("default", ["numpy==2.2.6"])
    assert bumped.name == "default-custom"
    assert "numpy==2.2.6" in bumped.requirements and "numpy==1.26.4" not in bumped.requirements
    assert image_tag(bumped) != DEFAULT_IMAGE


def test_settings_choose_the_set_and_bad_ones_are_one_line_errors() -> None:
    assert sandbox_image(SandboxSettings()) == DEFAULT_IMAGE
    chosen = SandboxSettings(package_set="classeval")
    assert sandbox_packages(chosen).name == "classeval"
    line = sandbox_line(chosen)
    assert image_tag(package_set("classeval")) in line and "gensim==4.3.3" in line
    assert sandbox_image(SandboxSettings(image="mine:1", package_set="classeval")) == "mine:1"
    for bad in (["numpy @ https://example.invalid/numpy.whl"], ["not a requirement!"]):
        with pytest.raises(SandboxError) as caught:
            sandbox_packages(SandboxSettings(packages=bad))
        assert "\n" not in str(caught.value) and "[sandbox] packages" in str(caught.value)
        assert "bad package set" in sandbox_line(SandboxSettings(packages=bad))


def test_wheels_are_chosen_for_the_sandboxs_python_not_the_hosts() -> None:
    args = target_args("x86_64")
    joined = " ".join(args)
    assert "--only-binary=:all: --python-version 3.11 --implementation cp --abi cp311" in joined
    platforms = [args[i + 1] for i, a in enumerate(args) if a == "--platform"]
    # bookworm's glibc 2.36 runs every manylinux wheel down to manylinux2014 (2.17).
    assert platforms[0] == "manylinux_2_36_x86_64" and "manylinux_2_17_x86_64" in platforms
    assert platforms[-1] == "manylinux2014_x86_64"


def test_the_classeval_set_covers_classevals_imports() -> None:
    data = Path(__file__).resolve().parents[3] / "shared/datasets/classeval/ClassEval_data.json.gz"
    if not data.exists():
        pytest.skip(f"no ClassEval task set at {data}")
    # Import name -> distribution, for the names that differ.
    distribution = {"PIL": "pillow", "bs4": "beautifulsoup4", "docx": "python-docx"}
    tasks = json.loads(gzip.decompress(data.read_bytes()))
    stdlib = set(__import__("sys").stdlib_module_names)
    wanted = set()
    for task in tasks:
        for line in [*task["import_statement"], *task["test"].splitlines()]:
            found = re.match(r"\s*(?:from|import)\s+([A-Za-z_]\w*)", line)
            if found and found.group(1) not in stdlib:
                wanted.add(distribution.get(found.group(1), found.group(1)))
    have = sandbox_distributions("no-such-image", package_set("classeval"))
    assert wanted and missing_distributions(sorted(wanted), have) == []
    assert {"numpy", "pandas", "gensim", "nltk", "pypdf2"} <= {d.name for d in have}
    # gensim 4.3's wheel needs numpy < 2, and so does one ClassEval reference solution.
    assert "numpy==1.26.4" in NAMED_SETS["classeval"]


def test_bubblewrap_never_meets_a_root_without_the_images_set(tmp_path: Path) -> None:
    assert bwrap_root(DEFAULT_IMAGE, tmp_path) is None  # nothing built: the backend decides
    (tmp_path / "rootfs-bookworm.complete").touch()  # only the plain debootstrapped root
    with pytest.raises(SandboxUnavailable, match="codegen sandbox build --offline"):
        bwrap_root(DEFAULT_IMAGE, tmp_path)
    assert bwrap_root("someone-elses:tag", tmp_path) is None  # not ours: the plain root
    built = image_rootfs_path(DEFAULT_IMAGE, tmp_path)
    built.with_name(built.name + ".complete").touch()
    assert bwrap_root(DEFAULT_IMAGE, tmp_path) == built


CLASSEVAL_BUILD = "codegen sandbox build --offline --package-set classeval"


def test_a_missing_image_or_root_names_the_build_command_of_its_set(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each backend's missing-image message gives the command that builds the image of the
    set it was opened for: the default set's command built the wrong one for ClassEval."""
    from types import SimpleNamespace

    import docker.errors

    from codegen.sandbox.backends.bwrap import BwrapSandbox
    from codegen.sandbox.backends.docker import DockerSandbox

    def inspect_image(image: str) -> None:
        raise docker.errors.ImageNotFound(image)

    no_images: Any = SimpleNamespace(api=SimpleNamespace(inspect_image=inspect_image))
    classeval_tag = image_tag(package_set("classeval"))
    said = re.escape(f"build it with '{CLASSEVAL_BUILD}'")
    with pytest.raises(SandboxUnavailable, match=said):
        DockerSandbox(classeval_tag, client=no_images, set_name="classeval")
    default = re.escape("build it with 'codegen sandbox build --offline'") + "$"
    with pytest.raises(SandboxUnavailable, match=default):
        DockerSandbox(DEFAULT_IMAGE, client=no_images)
    (tmp_path / "rootfs-bookworm.complete").touch()  # the plain root, not the set's
    with pytest.raises(SandboxUnavailable, match=re.escape(f"run '{CLASSEVAL_BUILD}'")):
        bwrap_root(classeval_tag, tmp_path, set_name="classeval")
    monkeypatch.setenv("CODEGEN_SANDBOX_CACHE", str(tmp_path / "nothing-built"))
    with pytest.raises(SandboxUnavailable, match=re.escape(f"run '{CLASSEVAL_BUILD}'")):
        BwrapSandbox(rootfs=None, set_name="classeval", prestart=False)


def test_package_set_builds_the_image_the_sets_commands_look_for(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`codegen sandbox build --package-set classeval` builds the tag `codegen eval classeval`
    opens (the setting untouched); a real build takes minutes, so build_image is recorded."""
    from codegen.evaluation.classeval.figures import CLASSEVAL_SHAPE
    from codegen.orchestration.cli import main
    from codegen.orchestration.cli.evaluate import _shape_sandbox
    from codegen.settings import get_settings

    built: list[tuple[str, str]] = []

    def build_image(tag: str, *, packages: object, **_: object) -> str:
        built.append((tag, packages.name))  # type: ignore[attr-defined]
        return tag

    monkeypatch.setattr("codegen.sandbox.image.build_image", build_image)
    assert main(["sandbox", "build", "--offline", "--package-set", "classeval"]) == 0
    wanted = sandbox_image(_shape_sandbox(get_settings(), CLASSEVAL_SHAPE).sandbox)
    assert built == [(wanted, "classeval")] and capsys.readouterr().out.strip() == wanted
    assert main(["sandbox", "build", "--offline"]) == 0  # without it: the setting's set
    assert built[-1] == (DEFAULT_IMAGE, "default")


def test_numpy_and_pandas_run_under_the_default_limits(sb: Sandbox) -> None:
    result = sb.run({"uses_both.py": USES_BOTH}, ["python3", "uses_both.py"], DEFAULTS)
    assert result.exit_code == 0, result
    assert result.stdout.split() == ["1.26.4", "2.2.3", "3.0", "2.5", "(200,", "200)"]


def test_pytest_passes_on_code_that_uses_pandas(sb: Sandbox) -> None:
    report = sb.run_pytest(SOLUTION, TESTS, DEFAULTS)
    assert [(c.name.split("::")[-1], c.outcome) for c in report.tests] == [
        ("test_mean", "passed"),
        ("test_other_column", "passed"),
    ], report


def test_a_module_outside_the_set_is_named_in_the_error(sb: Sandbox) -> None:
    result = sb.run({"m.py": "import gensim\n"}, ["python3", "m.py"], DEFAULTS)
    assert result.exit_code == 1
    assert "ModuleNotFoundError: No module named 'gensim'" in result.stderr


def test_the_distribution_list_is_what_the_sandbox_has(sb: Sandbox) -> None:
    """``sandbox_distributions`` against the sandbox's own view, on each backend."""
    listed = {d.name: d.version for d in sandbox_distributions(DEFAULT_IMAGE, package_set())}
    assert listed["numpy"] == "1.26.4" and listed["pandas"] == "2.2.3" and "pytest" in listed
    code = (  # where two site dirs hold one name, the one an import finds (first on the path)
        "import importlib.metadata as m, json, re\nfound = {}\n"
        "for d in m.distributions():\n"
        "    found.setdefault(re.sub(r'[-_.]+', '-', d.metadata['Name']).lower(), d.version)\n"
        "print(json.dumps(found))\n"
    )
    result = sb.run({"list.py": code}, ["python3", "list.py"], DEFAULTS)
    assert result.exit_code == 0, result
    assert json.loads(result.stdout) == listed
    assert missing_distributions(
        ["pandas", "NumPy", "gensim"], tuple(sandbox_distributions(DEFAULT_IMAGE, package_set()))
    ) == ["gensim"]


@pytest.mark.docker
def test_a_second_build_reaches_no_package_index(monkeypatch: pytest.MonkeyPatch) -> None:
    from sandbox_support import ensure_docker_image, ensure_rootfs_or_skip

    ensure_docker_image()
    ensure_rootfs_or_skip()
    # Any pip call now fails: no config, an index on a closed loopback port, no find-links.
    monkeypatch.setenv("PIP_CONFIG_FILE", "/dev/null")
    monkeypatch.setenv("PIP_INDEX_URL", "http://127.0.0.1:9/simple")
    monkeypatch.setenv("PIP_FIND_LINKS", "")
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    said: list[str] = []
    assert build_image(DEFAULT_IMAGE, offline=True, progress=said.append) == DEFAULT_IMAGE
    assert f"image {DEFAULT_IMAGE} already exists" in said
    assert not [line for line in said if "pip" in line or "building" in line], said
