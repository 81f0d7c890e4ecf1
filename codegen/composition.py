"""The composition root: settings -> the plain configuration each domain package takes.

Everything that turns the one ``Settings`` object into a domain's own config lives here, so
``settings`` stays a leaf of plain models and the domain packages never see ``Settings``. Both
the Dagster resources (``codegen/assets/resources.py``) and the CLI use these functions; nothing
here
imports Dagster, so a CLI command that only needs a setting answers quickly.

Corpus sources follow one rule, driven by each source's entry in
``codegen.corpus.sources.REGISTRY``:
the config's fields are filled from the source's settings section, the shared HTTP settings
where the config has such fields, and its secret from the environment, read here at the edge
and never stored in settings or metadata.
"""

from __future__ import annotations

import dataclasses
import os
from typing import TYPE_CHECKING, Any

from codegen.agents.dependencies import SandboxPackages
from codegen.agents.llm import CandidateRoute, LLMRoute, RoleModel, resolved_base_url
from codegen.corpus.chunk import Budget
from codegen.corpus.dedupe import DedupeParams
from codegen.corpus.sources import source_spec
from codegen.retrieval.ann import RecallTarget
from codegen.retrieval.embedders import EmbedderConfig
from codegen.retrieval.index import StoreConfig
from codegen.sandbox import Limits, backend_names
from codegen.sandbox.errors import SandboxError
from codegen.sandbox.image import PackageSet, image_tag, package_set, sandbox_distributions
from codegen.settings import (
    BadSettings,
    CandidateModel,
    LLMSettings,
    SandboxSettings,
    Settings,
    setting_origins,
)

if TYPE_CHECKING:
    from codegen.evaluation.session import EvalSetup


def source_config(settings: Settings, source: str) -> Any:
    spec = source_spec(source)
    corpus = settings.corpus
    section = corpus if spec.settings_key is None else getattr(corpus, spec.settings_key)
    config_type = spec.config_type()
    accepted = {f.name for f in dataclasses.fields(config_type)}
    values: dict[str, Any] = {
        "timeout_s": corpus.http_timeout_s,
        "retries": corpus.http_retries,
        **section.model_dump(),
    }
    if spec.secret_env and spec.secret_field:
        values[spec.secret_field] = os.environ.get(spec.secret_env) or None
    return config_type(**{k: v for k, v in values.items() if k in accepted})


def _set(**values: float | None) -> dict[str, float]:
    """The values a user set; the rest keep the domain type's own defaults."""
    return {name: value for name, value in values.items() if value is not None}


def dedupe_params(settings: Settings) -> DedupeParams:
    """The word-shingle settings; code's own parameters keep DedupeParams' measured defaults."""
    c = settings.corpus
    return DedupeParams(
        **_set(
            shingle_size=c.dedupe_shingle_size,
            num_perm=c.dedupe_num_perm,
            threshold=c.dedupe_threshold,
        )  # type: ignore[arg-type]
    )


def chunk_budget(settings: Settings) -> Budget:
    c = settings.corpus
    return Budget(**_set(max_tokens=c.chunk_max_tokens, min_tokens=c.chunk_min_tokens))  # type: ignore[arg-type]


def sandbox_backend(settings: Settings) -> str:
    """``[sandbox] backend``: a registered backend or ``auto``. The settings hold a plain name
    (they sit below the sandbox's registry); BadSettings here, worded as theirs, names the
    valid ones."""
    name = settings.sandbox.backend
    names = backend_names()
    if name in names:
        return name
    origin = setting_origins(settings)["sandbox.backend"]
    where = f"from {origin.name}" if origin.source == "environment" else f"of {origin.name}"
    choices = ", ".join(repr(n) for n in names[:-1]) + f" or {names[-1]!r}"
    raise BadSettings(f"bad settings: [sandbox] backend {where}: Input should be {choices}")


def sandbox_packages(sandbox: SandboxSettings) -> PackageSet:
    """The sandbox's package set: ``[sandbox] package_set`` plus ``packages``."""
    return package_set(sandbox.package_set, sandbox.packages)


def sandbox_image(sandbox: SandboxSettings) -> str:
    """``[sandbox] image``, else the tag that names the package set (DEFAULT_IMAGE for the
    default set)."""
    return sandbox.image or image_tag(sandbox_packages(sandbox))


def crew_packages(sandbox: SandboxSettings) -> SandboxPackages | None:
    """The package set the crew checks a spec's dependencies against: what the sandbox's image
    has where it was built here, else the set as declared; None when the settings name no valid
    set (opening the sandbox says why, in one line)."""
    try:
        packages = sandbox_packages(sandbox)
    except SandboxError:
        return None
    available = sandbox_distributions(sandbox_image(sandbox), packages)
    return SandboxPackages(sandbox.package_set, tuple(sandbox.packages), available, packages)


def sandbox_limits(
    sandbox: SandboxSettings, *, timeout_s: float | None = None, memory_mb: int | None = None
) -> Limits:
    """The limits of one execution: the sandbox's defaults, what the settings set, then the
    caller's own (a CLI flag, the evaluation's per-test timeout)."""
    return Limits(
        **_set(
            timeout_s=timeout_s if timeout_s is not None else sandbox.timeout_s,
            memory_mb=memory_mb if memory_mb is not None else sandbox.memory_mb,
            pids=sandbox.pids,
            cpus=sandbox.cpus,
            workdir_mb=sandbox.workdir_mb,
            max_output_bytes=sandbox.max_output_bytes,
        )  # type: ignore[arg-type]
    )


def store_config(settings: Settings) -> StoreConfig:
    r = settings.retrieval
    return StoreConfig(
        kind=r.vector_store,
        uri=settings.index_uri,
        weaviate_url=r.weaviate_url or os.environ.get("WEAVIATE_URL"),
        collection=r.weaviate_collection,
        recall_target=RecallTarget(mean=r.ann_recall_mean, minimum=r.ann_recall_min),
    )


def embedder_config(settings: Settings, name: str | None = None) -> EmbedderConfig:
    r = settings.retrieval
    return EmbedderConfig(
        name=name or r.embedder,
        device=r.device,
        cache_dir=str(settings.model_cache_dir),
        openai_model=r.openai_embedding_model,
        openai_dimensions=r.openai_embedding_dimensions,
        openai_base_url=settings.llm.base_url,
    )


def candidate_route(entry: CandidateModel) -> CandidateRoute:
    return CandidateRoute(**entry.model_dump())


def candidate_routes(llm: LLMSettings) -> tuple[CandidateRoute, ...]:
    """``[llm] candidates`` as one route entry per draft (a number N: N plain drafts)."""
    return tuple(candidate_route(c) for c in llm.candidate_entries())


def llm_route(settings: Settings) -> LLMRoute:
    """This process's non-secret LLM configuration: the base URL it would call (settings, else
    OPENAI_BASE_URL, else the SDK's default), each role's model and each programmer
    candidate's model, endpoint and key variable's name."""
    llm = settings.llm
    return LLMRoute(
        base_url=resolved_base_url(llm.base_url),
        default=RoleModel(**llm.default.model_dump()),
        roles={role: RoleModel(**m.model_dump()) for role, m in llm.agents.items()},
        candidates=candidate_routes(llm),
    )


def unset_key_envs(route: LLMRoute) -> str | None:
    """Why this process cannot call the route's candidates (None: it can): the first candidate
    whose ``api_key_env`` names a variable this environment does not set."""
    for index, name in route.key_envs():
        if not os.environ.get(name):
            return (
                f"[llm] candidates[{index}] takes its key from {name} (api_key_env), "
                "which is not set in this environment"
            )
    return None


def eval_setup(settings: Settings) -> EvalSetup:
    """What an evaluation session reads of the settings (``[eval]``, the sandbox's limits)."""
    from codegen.agents.pick import FILE_NAME
    from codegen.evaluation.session import EvalSetup

    limits = sandbox_limits(
        settings.sandbox, timeout_s=settings.eval.timeout_s, memory_mb=settings.eval.memory_mb
    )
    return EvalSetup(
        eval_dir=settings.eval_dir,
        limits=limits,
        workers=max(1, settings.eval.workers),
        samples=settings.eval.samples,
        reliability_file=settings.home / FILE_NAME,
    )
