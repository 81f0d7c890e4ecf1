"""Files the commands write, checked as the command line is read.

A file a command reads is checked by its own reader, whose error is a
``codegen.untrusted.BadInput`` (refused by ``cli.main``). A file it writes is checked here,
before any work: a path that cannot be written would otherwise fail only at the end, after
the work it was to hold.
"""

from __future__ import annotations

import os
from pathlib import Path

import click


class OutputFile(click.ParamType):
    """A path the command will write a file at (its missing folders are made then): refused
    (exit 2) when it is a folder, lies under a file, or under a folder this user cannot
    write."""

    name = "file"

    def convert(
        self, value: object, param: click.Parameter | None, ctx: click.Context | None
    ) -> Path:
        path = Path(str(value))
        if path.is_dir():
            self.fail(f"{path}: is a directory", param, ctx)
        if path.exists() and not os.access(path, os.W_OK):
            self.fail(f"{path}: not writable", param, ctx)
        folder = path.absolute().parent
        while not folder.exists():  # the nearest existing folder is where it gets made
            folder = folder.parent
        if not folder.is_dir():
            self.fail(f"{path}: {folder} is not a directory", param, ctx)
        if not os.access(folder, os.W_OK | os.X_OK):
            self.fail(f"{path}: cannot write in {folder}", param, ctx)
        return path


OUTPUT_FILE = OutputFile()
