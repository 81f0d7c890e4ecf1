"""``codegen sandbox build`` and ``codegen sandbox exec``: thin wrappers over ``sandbox``.

``exec`` is the one command whose exit status is not the shared rule's (``exits.py``): it
passes its command's own status through, as ``docker run`` does.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import click

from codegen.composition import sandbox_backend, sandbox_image, sandbox_limits, sandbox_packages
from codegen.orchestration.cli.exits import Refused
from codegen.sandbox import backend_names
from codegen.sandbox.image import NAMED_SETS
from codegen.settings import get_settings

if TYPE_CHECKING:
    from codegen.sandbox.types import ExecResult


class _BackendChoice(click.Choice[str]):
    """The registered backends, read each time ``--backend`` is checked or shown: a
    ``click.Choice`` copies its choices when built, at import, and would miss a backend
    registered after this module was first imported."""

    def __init__(self) -> None:
        super().__init__(())

    @property  # type: ignore[override]
    def choices(self) -> Sequence[str]:
        return backend_names()

    @choices.setter
    def choices(self, _value: Sequence[str]) -> None:
        pass  # click.Choice.__init__ stores a snapshot; the registry is the one list


def _progress(message: str) -> None:
    click.echo(f"sandbox: {message}", err=True)


@click.group("sandbox")
def sandbox_group() -> None:
    """Build the sandbox image or run a command inside the sandbox."""


@sandbox_group.command("build")
@click.option(
    "--offline",
    is_flag=True,
    help="Build from Debian packages (debootstrap + docker import) instead of a registry image.",
)
@click.option("--force", is_flag=True, help="Rebuild even if the image tag exists.")
@click.option("--tag", default=None, help="Image tag (default: sandbox.image setting).")
@click.option(
    "--package-set",
    type=click.Choice(sorted(NAMED_SETS)),
    default=None,
    help="The named package set to install (default: [sandbox] package_set); [sandbox] "
    "packages are added to it. Its image is the one a command using the set looks for.",
)
def build(offline: bool, force: bool, tag: str | None, package_set: str | None) -> None:
    """Build the sandbox image; a no-op when the tag already exists."""
    from codegen.sandbox import SandboxError
    from codegen.sandbox.image import build_image

    settings = get_settings().sandbox
    if package_set is not None:
        settings = settings.model_copy(update={"package_set": package_set})
    try:
        # The set plus [sandbox] packages, installed now; the tag names them.
        packages = sandbox_packages(settings)
        tag = tag or sandbox_image(settings)
    except SandboxError as exc:  # settings that name no valid set
        raise Refused(str(exc)) from exc
    try:
        built = build_image(
            tag, offline=offline, packages=packages, force=force, progress=_progress
        )
    except SandboxError as exc:
        raise click.ClickException(str(exc)) from exc
    click.echo(built)


@sandbox_group.command(
    "exec", context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False}
)
@click.option(
    "--dir",
    "directory",
    required=True,
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="Directory copied in as the working directory (links stay links).",
)
@click.option("--timeout", type=click.FloatRange(min=0.1, max=3600), default=None)
@click.option("--memory", type=click.IntRange(min=16, max=65536), default=None, help="MB")
@click.option("--backend", type=_BackendChoice(), default=None)
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED)
def exec_command(
    directory: Path,
    timeout: float | None,
    memory: int | None,
    backend: str | None,
    command: tuple[str, ...],
) -> None:
    """Run COMMAND in the sandbox and print the JSON result.

    Exits with COMMAND's exit status, as `docker run` does: 128+N when signal N ended it (137:
    killed, for memory say), 124 when it ran out of time, 125 when the sandbox lost it.

    Example: codegen sandbox exec --dir . --timeout 10 -- python3 -m pytest -q
    """
    from codegen.sandbox import SandboxError, open_sandbox
    from codegen.sandbox.files import read_dir

    configured = get_settings()
    settings = configured.sandbox
    limits = sandbox_limits(settings, timeout_s=timeout, memory_mb=memory)
    try:
        image = sandbox_image(settings)
        files = read_dir(directory, limits.workdir_mb * 1024 * 1024)
    except (SandboxError, OSError, ValueError) as exc:  # the --dir or the settings: nothing ran
        raise Refused(str(exc)) from exc
    try:
        with open_sandbox(
            backend or sandbox_backend(configured),
            image=image,
            set_name=settings.package_set,
            pool_size=1,
            isolation="strict",
            host_usr=settings.bwrap_host_usr,
        ) as sb:
            result = sb.run(files, list(command), limits)
    except (SandboxError, OSError, ValueError) as exc:
        raise click.ClickException(str(exc)) from exc
    click.echo(json.dumps(result.to_dict(), indent=2))
    code = command_status(result)
    if code:
        raise click.exceptions.Exit(code)


TIMED_OUT_EXIT = 124  # as timeout(1) says it
LOST_EXIT = 125  # docker run's status when docker itself failed to run the command
KILLED_EXIT = 128 + 9


def command_status(result: ExecResult) -> int:
    """The shell's status for how the command ended: its exit code, 128+N for signal N."""
    if result.timed_out:
        return TIMED_OUT_EXIT
    if result.exit_code is None:  # the sandbox's supervisor did not answer
        return KILLED_EXIT if result.oom_killed else LOST_EXIT
    return 128 - result.exit_code if result.exit_code < 0 else result.exit_code
