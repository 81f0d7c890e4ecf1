"""What a spec needs that the sandbox lacks: its ``dependencies`` against the sandbox's
package set, compared by PEP 503 name. A request that needs a missing distribution ends
before the programmer is called (``missing_dependency``), naming the distributions and the
setting and command that add them: code importing them could never pass in the sandbox."""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass

from packaging.utils import canonicalize_name

from codegen.agents.spec import Spec
from codegen.sandbox.image import (
    Distribution,
    PackageSet,
    build_command,
    missing_distributions,
)

# The distribution name at the start of a requirement (``pandas>=2`` -> ``pandas``).
_NAME = re.compile(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)")


@dataclass(frozen=True)
class SandboxPackages:
    """The sandbox's package set as the crew checks a spec against it."""

    set_name: str  # [sandbox] package_set
    extra: tuple[str, ...]  # [sandbox] packages as set now
    available: tuple[Distribution, ...]  # codegen.sandbox.image.sandbox_distributions
    # The set as declared (its label and pinned requirements), shown in the request's report.
    declared: PackageSet | None = None


def wanted(spec: Spec) -> list[str]:
    """The spec's third-party distribution names, each once, in its order; standard-library
    module names a model listed by mistake (``json``) are not distributions and are dropped."""
    out: list[str] = []
    seen: set[str] = set()
    for text in spec.dependencies:
        match = _NAME.match(text)
        if match is None:
            continue
        name = match.group(1)
        key = canonicalize_name(name)
        if key in seen or name in sys.stdlib_module_names:
            continue
        seen.add(key)
        out.append(name)
    return out


def missing(spec: Spec, packages: SandboxPackages) -> list[str]:
    """The spec's distributions the sandbox lacks (PEP 503 names compare equal)."""
    return missing_distributions(wanted(spec), packages.available)


def missing_reason(names: list[str], packages: SandboxPackages) -> str:
    """One line: what is missing, and the setting and command that add it."""
    setting = [*packages.extra, *(canonicalize_name(n) for n in names)]
    listed = ", ".join(f'"{n}"' for n in setting)
    which = "it" if len(names) == 1 else "them"
    return (
        f"the spec needs {', '.join(names)}, which the sandbox's package set "
        f"({packages.set_name}) lacks; add {which}: [sandbox] packages = [{listed}], "
        f"then run: {build_command(packages.set_name)}"
    )
