"""A request's identity and its artifact files: the id, and the one atomic file writer.

Both belong to the crew (``run_crew`` names each request; each step stores its files), and the
request store above it uses them too.
"""

from __future__ import annotations

import json
import re
import secrets
from pathlib import Path

from codegen.durable import atomic_write_text
from codegen.json_types import JSONObject

ARTIFACT_FILES = ("solution.py", "test_solution.py", "README.md", "spec.json", "report.json")
_ID = re.compile(r"^req-[0-9a-f]{16}$")


def new_request_id() -> str:
    return f"req-{secrets.token_hex(8)}"


def is_request_id(value: str) -> bool:
    return bool(_ID.match(value))


def write_artifact(folder: Path, name: str, content: str | JSONObject) -> Path:
    """Replace one artifact file atomically and durably (a crash never leaves half a file)."""
    if name not in ARTIFACT_FILES:
        raise ValueError(f"not an artifact name: {name}")
    text = content if isinstance(content, str) else json.dumps(content, indent=2) + "\n"
    return atomic_write_text(folder / name, text)
