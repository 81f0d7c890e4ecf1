"""Runs inside the sandbox (standard library only): the kernel-enforced file fence around a
candidate's process. Shipped beside every driver by ``codegen.sandbox.protocol``; the host
imports it only to ask what the kernel offers (``available``).

``enter(write_dir)`` is called in a candidate's process before its code runs. It restricts the
process, and every process it starts, with Landlock (the three system calls through ``ctypes``,
after ``PR_SET_NO_NEW_PRIVS``): afterwards it may write only ``write_dir`` and read only what a
Python program needs, the paths of ``SYSTEM_READS`` and ``interpreter_reads()`` (the
interpreter, its standard library, the package set's site dirs): not the driver's folder, the
test, another sample's folder, ``/tmp`` or any other process's ``/proc`` entry. From ABI 4 it
also refuses TCP bind/connect, and from ABI 6 signals to processes outside the fence (the
driver, the zygote, the test side) and abstract unix sockets made outside it (the socket pair
the candidate answers on is inherited, so unaffected). What Landlock does not cover: ``stat``
of a path (names can be probed, not read), descriptors opened before ``enter``.

A kernel without Landlock (or a seccomp filter that refuses it) leaves the process as it was;
``enter`` then says ``"none: <why>"`` and the caller relies on separate work folders.
"""

import ctypes
import os
import site
import stat
import sys
import sysconfig

# System calls (the same numbers on x86_64 and aarch64: allocated after the 5.x unification)
# and prctl's option.
CREATE_RULESET, ADD_RULE, RESTRICT_SELF = 444, 445, 446
PR_SET_NO_NEW_PRIVS = 38
CREATE_RULESET_VERSION = 1
RULE_PATH_BENEATH = 1

# Filesystem rights (include/uapi/linux/landlock.h).
EXECUTE = 1 << 0
WRITE_FILE = 1 << 1
READ_FILE = 1 << 2
READ_DIR = 1 << 3
REMOVE_DIR = 1 << 4
REMOVE_FILE = 1 << 5
MAKE_CHAR = 1 << 6
MAKE_DIR = 1 << 7
MAKE_REG = 1 << 8
MAKE_SOCK = 1 << 9
MAKE_FIFO = 1 << 10
MAKE_BLOCK = 1 << 11
MAKE_SYM = 1 << 12
REFER = 1 << 13  # ABI 2
TRUNCATE = 1 << 14  # ABI 3
IOCTL_DEV = 1 << 15  # ABI 5
NET_BIND_TCP, NET_CONNECT_TCP = 1 << 0, 1 << 1  # ABI 4
SCOPE_ABSTRACT_UNIX_SOCKET, SCOPE_SIGNAL = 1 << 0, 1 << 1  # ABI 6

FILE_RIGHTS = EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE | IOCTL_DEV  # the rest need a dir

# What a fenced process may read (and execute), besides the interpreter's own directories
# (``interpreter_reads``), its ``write_dir`` and the caller's ``read_dirs``. Missing paths
# are skipped. Every entry is public system data: nothing of a job lives here.
SYSTEM_READS = (
    # shared libraries of the interpreter and of extension modules (and Debian's stdlib and
    # dist-packages, which live under them), with the loader's cache
    "/lib",
    "/lib64",
    "/usr/lib",
    "/usr/lib64",
    "/usr/local/lib",
    "/etc/ld.so.cache",
    # time zones and locales
    "/usr/share/zoneinfo",
    "/etc/localtime",
    "/usr/lib/locale",
    "/usr/share/locale",
    "/etc/hostname",
    # the MIME table the standard library's mimetypes reads when a package imports it
    # (openpyxl does: ClassEval _38)
    "/etc/mime.types",
    # devices: /dev/null is also writable (below); randomness comes from getrandom() anyway
    "/dev/null",
    "/dev/urandom",
    # this process's own entry (resolved when entered; other pids stay unreadable)
    "/proc/self",
)
WRITABLE_DEVICES = ("/dev/null",)


class _RulesetAttr(ctypes.Structure):
    _fields_ = [
        ("handled_access_fs", ctypes.c_uint64),
        ("handled_access_net", ctypes.c_uint64),  # ABI 4
        ("scoped", ctypes.c_uint64),  # ABI 6
    ]


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1  # __attribute__((packed)) in the kernel's header: 12 bytes
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


_LIBC = None


def _libc():
    global _LIBC
    if _LIBC is None:
        _LIBC = ctypes.CDLL(None, use_errno=True)
        _LIBC.syscall.restype = ctypes.c_long
    return _LIBC


def _syscall(number, *args):
    """``syscall(number, *args)``, each integer passed as a full register (a C long)."""
    return _libc().syscall(
        ctypes.c_long(number), *(ctypes.c_long(a) if isinstance(a, int) else a for a in args)
    )


def _abi():
    """The kernel's Landlock ABI version, or (None, why)."""
    try:
        _libc()
    except OSError as exc:
        return None, f"no C library through ctypes ({exc})"
    version = _syscall(CREATE_RULESET, None, 0, CREATE_RULESET_VERSION)
    if version < 0:
        errno = ctypes.get_errno()
        why = {
            38: "the kernel has no Landlock (ENOSYS)",
            95: "Landlock is off in this kernel's boot settings (EOPNOTSUPP)",
            1: "a seccomp filter refuses Landlock (EPERM)",
        }.get(errno, f"landlock_create_ruleset failed: {os.strerror(errno)}")
        return None, why
    return int(version), ""


def available():
    """What the kernel offers here, without restricting anything: "landlock (ABI n)" or
    "none: <why>"."""
    abi, why = _abi()
    return f"landlock (ABI {abi})" if abi else f"none: {why}"


def _handled_fs(abi):
    rights = (1 << 13) - 1  # ABI 1: EXECUTE .. MAKE_SYM
    if abi >= 2:
        rights |= REFER
    if abi >= 3:
        rights |= TRUNCATE
    if abi >= 5:
        rights |= IOCTL_DEV
    return rights


def _pth_dirs(site_dir):
    """The directories a site dir's .pth files put on ``sys.path`` (the package set is one)."""
    found = []
    try:
        names = sorted(n for n in os.listdir(site_dir) if n.endswith(".pth"))
    except OSError:
        return found
    for name in names:
        try:
            with open(os.path.join(site_dir, name), encoding="utf-8") as fh:
                lines = fh.read().splitlines()
        except (OSError, UnicodeDecodeError):
            continue
        for line in lines:
            line = line.strip()
            if line and not line.startswith(("#", "import ", "import\t")):
                found.append(os.path.join(site_dir, line))
    return found


_INTERPRETER_READS = None


def interpreter_reads():
    """The interpreter's binary, its standard library and site dirs (the package set's
    site-packages and the dirs their .pth files add), from ``sysconfig`` and ``site``, never
    from ``sys.path`` (where a driver puts its own folder). Worked out once per process (a
    driver's zygote does it before forking its children)."""
    global _INTERPRETER_READS
    if _INTERPRETER_READS is None:
        _INTERPRETER_READS = _interpreter_reads()
    return _INTERPRETER_READS


def _interpreter_reads():
    paths = [sys.executable, os.path.realpath(sys.executable)]
    if sys.prefix != sys.base_prefix:  # a virtual environment: its interpreter reads this
        paths.append(os.path.join(sys.prefix, "pyvenv.cfg"))
    names = ("stdlib", "platstdlib", "purelib", "platlib")
    for scheme_vars in ({}, {"base": sys.base_prefix, "platbase": sys.base_exec_prefix}):
        found = sysconfig.get_paths(vars=scheme_vars)
        paths += [found[n] for n in names if n in found]
    site_dirs = list(site.getsitepackages()) if hasattr(site, "getsitepackages") else []
    for site_dir in site_dirs:
        paths += [site_dir, *_pth_dirs(site_dir)]
    paths += (sysconfig.get_config_var("TZPATH") or "").split(os.pathsep)
    return tuple(dict.fromkeys(p for p in paths if p))


def _add_rule(ruleset, path, rights, handled):
    """Allow ``rights`` (those ``handled``) beneath ``path``; a missing path is skipped."""
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        if not stat.S_ISDIR(os.fstat(fd).st_mode):
            rights &= FILE_RIGHTS  # a file's rule may carry file rights only
        attr = _PathBeneathAttr(rights & handled, fd)
        result = _syscall(ADD_RULE, ruleset, RULE_PATH_BENEATH, ctypes.byref(attr), 0)
        if result < 0:
            errno = ctypes.get_errno()
            raise OSError(errno, f"landlock_add_rule({path}): {os.strerror(errno)}")
        return True
    finally:
        os.close(fd)


def _single_threaded():
    try:
        return len(os.listdir("/proc/self/task")) <= 1
    except OSError:
        return True  # no /proc: nothing to check against


def enter(write_dir, read_dirs=()):
    """Fence this process (and what it starts): write only ``write_dir``, read only
    ``SYSTEM_READS``, ``interpreter_reads()``, ``write_dir`` and ``read_dirs``. Returns
    "landlock (ABI n)", or "none: <why>" when the kernel cannot (nothing changed then).
    Landlock restricts the calling thread only: a process with other threads is refused."""
    write_dir = os.path.abspath(write_dir)
    abi, why = _abi()
    if not abi:
        return f"none: {why}"
    if not _single_threaded():
        raise RuntimeError("fence.enter() in a process with more than one thread")
    if not os.path.isdir(write_dir):
        raise ValueError(f"fence.enter(): {write_dir} is not a directory")
    handled = _handled_fs(abi)
    attr = _RulesetAttr(handled_access_fs=handled)
    size = 8
    if abi >= 4:
        attr.handled_access_net = NET_BIND_TCP | NET_CONNECT_TCP
        size = 16
    if abi >= 6:
        attr.scoped = SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL
        size = 24
    ruleset = _syscall(CREATE_RULESET, ctypes.byref(attr), size, 0)
    if ruleset < 0:
        return f"none: landlock_create_ruleset failed: {os.strerror(ctypes.get_errno())}"
    try:
        read = READ_FILE | READ_DIR | EXECUTE
        for path in (*SYSTEM_READS, *interpreter_reads(), *read_dirs):
            _add_rule(ruleset, path, read, handled)
        for path in WRITABLE_DEVICES:
            _add_rule(ruleset, path, READ_FILE | WRITE_FILE | TRUNCATE | IOCTL_DEV, handled)
        if not _add_rule(ruleset, write_dir, handled, handled):
            raise ValueError(f"fence.enter(): cannot open {write_dir}")
        if _libc().prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS) failed")
        if _syscall(RESTRICT_SELF, ruleset, 0) != 0:
            errno = ctypes.get_errno()
            raise OSError(errno, f"landlock_restrict_self: {os.strerror(errno)}")
    finally:
        os.close(ruleset)
    if "tempfile" in sys.modules:
        sys.modules["tempfile"].tempdir = None  # chosen again, from TMPDIR below
    os.environ["TMPDIR"] = write_dir  # /tmp is outside the fence
    return f"landlock (ABI {abi})"
