"""Runs inside the sandbox (standard library only): the file fence a candidate's process enters
before its code runs. Shipped beside the drivers; never imported on the host.

Placeholder: the interface the drivers call, with no fence yet (every record says so). The
kernel-enforced version (Landlock) replaces this module with the same two functions.
"""


def available() -> str:
    """``landlock`` when this kernel can fence a process, else ``none: <why>``."""
    return "none: placeholder"


def enter(write_dir: str, read_dirs: tuple[str, ...] = ()) -> str:
    """Fence this process: from now on it may write only ``write_dir`` and read only what a
    program needs plus ``read_dirs``. ``landlock`` when entered, else ``none: <why>``."""
    return "none: placeholder"
