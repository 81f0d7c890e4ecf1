"""Warnings when a request's names and its spec's disagree: a request for ``is_palindrome``
answered with a spec for ``primes_up_to`` must not end ``passed`` without a hint.

The names a request uses are read conservatively, so that ordinary English is never taken
for code:
- an identifier followed by ``(`` (``primes_up_to(n)``, ``LRUCache(capacity)``), except
  builtins, keywords, one letter (``f(x)`` is mathematics), dotted calls on anything but a
  class of the spec (``pd.read_csv(``, ``c.get(``) and English plurals (``item(s)``);
- a code-shaped identifier in backticks (an underscore or a capital in it: ``is_palindrome``,
  ``Stack``; a plain lowercase word such as `price` may be a column or a key, and an
  acronym such as `CSV` a format, so neither counts);
- a class the request names: ``class Stack``, ``a BankAccount class`` (a CamelCase name);
- in a fenced code block only the top-level ``def``/``class`` names.
Names of the standard library's modules and of the spec's dependencies are never counted.

A used name warns when the spec does not define it (as a program's command, a function,
class, method, attribute or constant; a backticked name, or any name when the spec has a
program, only when the spec never mentions it: a program's spec retells its problem). The
other way, when the request names any code at all, each function and class of the spec whose
words the request never uses warns too (a request that names nothing leaves naming to the
analyzer); for a spec with a program only its command does (the functions it lists are
where the program's logic lives, which the request had no reason to name).

When the spec has none of the names the request uses, it answers another request
(``off_target``): not a warning but the request's ending. Some of them is a warning only.
"""

from __future__ import annotations

import builtins
import keyword
import re
import sys

from codegen.agents.spec.outline import has_words, words
from codegen.agents.spec.schema import Spec

_IDENT = r"[A-Za-z_][A-Za-z0-9_]*"
_CALL = re.compile(rf"(?<![\w.])({_IDENT}(?:\.{_IDENT})*)\(([^()\n]{{0,3}}\)?)")
_BACKTICK = re.compile(r"(?<!`)`([^`\n]{1,80})`(?!`)")
_CLASS_AFTER = re.compile(r"\bclass(?:es)?\s+(?:called\s+|named\s+)?`?([A-Z][A-Za-z0-9_]*)")
_CLASS_BEFORE = re.compile(rf"\b`?({_IDENT})`?\s+class\b")
_FENCE = re.compile(r"```[^\n]*\n(.*?)(?:```|\Z)", re.S)
_DEFINED_IN_FENCE = re.compile(rf"^(?:async\s+)?(?:def|class)\s+({_IDENT})", re.M)
_NOT_CODE = (
    set(dir(builtins)) | set(keyword.kwlist) | set(sys.stdlib_module_names) | {"self", "cls"}
)
# Words that read as a class's name after "class" in English ("a class Python programmers").
_ENGLISH = {"Python", "The", "That", "This", "Which", "With", "In", "For", "It", "I"}


def _code_shaped(name: str) -> bool:
    """``is_palindrome``, ``LRUCache``, ``Stack``: not ``price`` (a word), not ``CSV``."""
    if "_" in name.strip("_"):
        return True
    return name[:1].isupper() and not name.isupper()


def _camel(name: str) -> bool:
    return re.search(r"[a-z0-9][A-Z]", name) is not None


# How a name was used: as code (a call, a definition, a class named), or only in backticks.
CODE, BACKTICKED = "code", "backticked"


def used_names(request: str, spec: Spec | None = None) -> dict[str, str]:
    """The names ``request`` uses as code, in order, each with how (``CODE`` or
    ``BACKTICKED``; see the module docstring)."""
    classes = {c.name for c in spec.classes} if spec is not None else set()
    skip = _NOT_CODE | {d.replace("-", "_") for d in spec.dependencies} if spec else _NOT_CODE
    found: dict[str, str] = {}

    def add(name: str, how: str = CODE) -> None:
        if len(name) > 1 and name not in skip and found.get(name) != CODE:
            found[name] = how

    for block in _FENCE.findall(request):
        for name in _DEFINED_IN_FENCE.findall(block):
            add(name)
    prose = _FENCE.sub(" ", request)
    for match in _CALL.finditer(prose):
        dotted, args = match.group(1), match.group(2)
        parts = dotted.split(".")
        if len(parts) > 1:
            if parts[0] in classes:
                add(parts[-1])
            continue
        name = parts[0]
        if args in ("s)", "es)") and name.isalpha() and (name.islower() or name.istitle()):
            continue  # "item(s)": an English plural
        add(name)
    for text in _BACKTICK.findall(prose):
        bare = re.fullmatch(rf"({_IDENT})(?:\(.*\))?", text.strip())
        if bare and (_code_shaped(bare.group(1)) or "(" in text):
            add(bare.group(1), CODE if "(" in text else BACKTICKED)
    for name in _CLASS_AFTER.findall(prose):
        if name not in _ENGLISH:
            add(name)
    for name in _CLASS_BEFORE.findall(prose):
        if _camel(name):
            add(name)
    return found


def _defined(spec: Spec) -> set[str]:
    out = set(_delivered(spec))
    for c in spec.classes:
        out |= {m.name for m in c.methods} | {a.name for a in c.attributes}
    return out


def _delivered(spec: Spec) -> list[str]:
    """What the module offers by name: its program (the command), functions, classes and
    constants."""
    program = [spec.program.name] if spec.program is not None else []
    return program + spec.names()


def _top(spec: Spec) -> list[str]:
    """The names a request is expected to mention: a program's command (its functions are
    where its logic lives, which a request for a program does not name), else the functions
    and classes."""
    if spec.program is not None:
        return [spec.program.name]
    return [f.name for f in spec.functions] + [c.name for c in spec.classes]


def _lacking(used: dict[str, str], spec: Spec) -> list[str]:
    """The names of ``used`` that the spec does not have: not defined, and a backticked one
    not even mentioned (it may be a column or a key the spec uses in its text)."""
    defined = _defined(spec)
    mentioned = set(re.findall(_IDENT, spec.model_dump_json()))
    # A program's spec retells its problem in words: a name it repeats (the problem's ``gcd``,
    # the stub a judge's statement shows) is that problem's vocabulary, not a missing interface.
    retold = spec.program is not None
    return [
        name
        for name, how in used.items()
        if name not in defined and not ((how == BACKTICKED or retold) and name in mentioned)
    ]


def off_target(request: str, spec: Spec) -> str | None:
    """Why the spec answers another request, or None: the request names code and the spec
    has none of those names (some of them: only ``name_warnings``; none named: None)."""
    used = used_names(request, spec)
    lacking = _lacking(used, spec)
    if not used or len(lacking) < len(used):
        return None
    asked = ", ".join(f"`{name}`" for name in used)
    delivered = ", ".join(f"`{name}`" for name in _delivered(spec)) or "nothing"
    purpose = " ".join(spec.purpose.split())
    about = f" ({purpose[:200]}{'...' * (len(purpose) > 200)})" if purpose else ""
    return (
        f"the spec answers another request: the request asks for {asked}; "
        f"the spec defines {delivered}{about}"
    )


def name_warnings(request: str, spec: Spec) -> list[str]:
    """One line per name the request uses that the spec lacks, and per function or class of
    the spec the request never mentions (only when the request names code itself)."""
    used = used_names(request, spec)
    if not used:
        return []
    top = _top(spec)
    listed = ", ".join(_delivered(spec) if spec.program is not None else top)
    warnings: list[str] = []
    for name in _lacking(used, spec):
        warnings.append(
            f"the request names `{name}`, which the spec does not define (it defines: {listed})"
        )
    request_words = words(request)
    for name in top:
        if name not in used and not has_words(request_words, name):
            warnings.append(f"the spec defines `{name}`, which the request does not mention")
    return warnings
