"""The ``codegen`` command line.

Each command group lives in its own module and is registered in COMMAND_MODULES. Every error
reaches the user as one line on stderr with a non-zero exit (the statuses: ``exits.py``); set
CODEGEN_DEBUG=1 for the traceback.
"""

from __future__ import annotations

import atexit
import contextlib
import gc
import importlib
import os
import sys
import threading
import traceback

import click

from codegen.orchestration.cli.exits import REFUSED_EXIT
from codegen.settings import BadSettings, get_settings
from codegen.untrusted import BadInput

__all__ = ["COMMAND_MODULES", "cli", "main", "run"]

# command name -> (module path, attribute holding its click command or group)
COMMAND_MODULES: dict[str, tuple[str, str]] = {
    "info": ("codegen.orchestration.cli.info", "info"),
    "sandbox": ("codegen.orchestration.cli.sandbox", "sandbox_group"),
    "corpus": ("codegen.orchestration.cli.corpus", "corpus_group"),
    "eval": ("codegen.orchestration.cli.evaluate", "eval_group"),
    "generate": ("codegen.orchestration.cli.generate", "generate"),
    "review": ("codegen.orchestration.cli.review", "review"),
    "requests": ("codegen.orchestration.cli.review", "requests"),
    "search": ("codegen.orchestration.cli.search", "search"),
    "replay": ("codegen.orchestration.cli.replay", "replay_group"),
}


class LazyGroup(click.Group):
    """Imports a command's module only when that command runs (click's documented lazy
    loading), so a command does not first import every other command's module. `codegen
    --help` still imports them all, for their one-line help."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMAND_MODULES)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in COMMAND_MODULES:
            return None
        module, attr = COMMAND_MODULES[cmd_name]
        command = getattr(importlib.import_module(module), attr)
        if not isinstance(command, click.Command) or command.name != cmd_name:
            raise RuntimeError(f"{module}.{attr} is not the {cmd_name!r} command")
        return command

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        # Whether a command's --help was asked for (the callback runs before it is parsed).
        ctx.meta["help"] = any(a in ctx.help_option_names for a in args)
        return super().resolve_command(ctx, args)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="multiagent-codegen", prog_name="codegen")
@click.pass_context
def cli(ctx: click.Context) -> None:
    """Turn a natural-language programming request into tested, documented Python code.

    Configuration: CODEGEN_* environment variables override the TOML file named by
    CODEGEN_CONFIG (default $CODEGEN_HOME/codegen.toml). The LLM endpoint comes from
    OPENAI_BASE_URL and OPENAI_API_KEY.
    """
    # A bad setting stops every command before it does anything, one that reads no setting
    # (`codegen replay serve`) too; a command's --help still answers.
    if not ctx.meta.get("help"):
        from codegen.composition import sandbox_backend  # its registry: above the settings

        sandbox_backend(get_settings())


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def main(argv: list[str] | None = None) -> int:
    try:
        # Outside standalone mode click returns a command's Exit code instead of raising it.
        code = cli.main(args=argv, prog_name="codegen", standalone_mode=False)
        if isinstance(code, int) and code:
            return code
    except click.exceptions.NoArgsIsHelpError as exc:
        click.echo(exc.ctx.get_help() if exc.ctx else "", err=True)
        return REFUSED_EXIT
    except click.UsageError as exc:
        path = exc.ctx.command_path if exc.ctx else "codegen"
        hint = f" (see '{path} --help')"
        click.echo(f"codegen: error: {_one_line(exc.format_message())}{hint}", err=True)
        return REFUSED_EXIT
    except click.ClickException as exc:
        click.echo(f"codegen: error: {_one_line(exc.format_message())}", err=True)
        return exc.exit_code
    except click.exceptions.Exit as exc:
        return exc.exit_code
    # Refused before any work: a setting (named, never its value) or a file that cannot be used.
    except (BadSettings, BadInput) as exc:
        click.echo(f"codegen: error: {_one_line(str(exc))}", err=True)
        return REFUSED_EXIT
    except click.Abort:
        click.echo("codegen: aborted", err=True)
        return 130
    except KeyboardInterrupt:
        click.echo("codegen: interrupted", err=True)
        return 130
    except Exception as exc:  # the promise: never a traceback unless asked for
        if os.environ.get("CODEGEN_DEBUG"):
            traceback.print_exc()
        click.echo(f"codegen: error: {type(exc).__name__}: {_one_line(str(exc))}", err=True)
        return 1
    return 0


# How long at most the console script leaves the cyclic garbage collector off while a command
# starts (see ``pause_gc_during_startup``).
STARTUP_GC_PAUSE_S = 10.0


def pause_gc_during_startup() -> None:
    """The collector off until the command's first model call is on its way (at most
    STARTUP_GC_PAUSE_S), then on, with what exists by then frozen. A command's imports (Dagster,
    SQLAlchemy, the openai SDK, the code location) leave some 300,000 objects that live as long
    as the process, and while they load, each full collection walks all of them again: about
    0.5 s of a `codegen generate` before its first model call (benchmarks/crew_overhead.py),
    to free next to nothing (a whole request with the collector off peaks 3% higher). Frozen,
    they are never walked again; what the command allocates afterwards is collected as usual."""
    from codegen.agents.llm import first_call_started

    def resume() -> None:
        first_call_started.wait(STARTUP_GC_PAUSE_S)
        gc.freeze()
        gc.enable()

    gc.disable()
    threading.Thread(target=resume, name="gc-after-startup", daemon=True).start()


def run() -> None:
    """The console script. It exits without the interpreter's own teardown: every exit handler
    still runs (atexit, and multiprocessing's finalizers, which close the sandboxes), but
    freeing one by one the objects Dagster and the SDKs loaded costs about 0.8 s per command
    (benchmarks/crew_overhead.py), and nothing needs it once the handlers have run. The
    command's threads have ended or are idle pool workers by the time ``main`` returns."""
    pause_gc_during_startup()
    code = main()
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        # A closed pipe (`codegen ... | head`) has nothing left to lose.
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    os._exit(code)
