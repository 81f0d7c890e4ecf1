"""Settings -> the plain config each corpus connector takes (domain code never sees Settings).

Shared by the corpus assets and the CLI, like settings/retrieval.py for the index.

One rule for every source, driven by its entry in ``corpus.sources.REGISTRY``: the config's
fields are filled from the source's settings section, the shared HTTP settings where the
config has such fields, and its secret from the environment, read here at the edge and never
stored in settings or metadata.
"""

from __future__ import annotations

import dataclasses
import os
from typing import Any

from corpus.dedupe import DedupeParams
from corpus.sources import source_spec
from settings import Settings


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


def dedupe_params(settings: Settings) -> DedupeParams:
    """The word-shingle settings; code's own parameters keep DedupeParams' measured defaults."""
    c = settings.corpus
    return DedupeParams(c.dedupe_shingle_size, c.dedupe_num_perm, c.dedupe_threshold)
