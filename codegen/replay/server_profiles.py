"""How OpenAI-compatible servers of each kind treat ``response_format``: the profiles the
scripted and replay servers can play (``STRUCTURED_PROFILES``), with the refusal each one
sends for ``json_schema`` and the error body every such server uses."""

from __future__ import annotations

from codegen.json_types import JSONObject

# How servers without Structured Outputs answer ``response_format: json_schema``, from their
# sources and bug reports:
# - llama.cpp server before Sep 2024 (ggml-org/llama.cpp#9522, #9527): HTTP 500;
# - vLLM before 0.5.5 (vllm-project/vllm#7654 added it): pydantic rejects the Literal type and
#   the server answers 400 with its own ErrorResponse shape (no "error" wrapper);
# - Ollama before 0.5 (ollama/ollama openai.go only mapped json_object): ignored, HTTP 200.
REFUSALS: dict[str, tuple[int, JSONObject]] = {
    "llama.cpp": (
        500,
        {
            "error": {
                "code": 500,
                "message": 'response_format type must be one of "text" or "json_object", '
                "but got: json_schema",
                "type": "server_error",
            }
        },
    ),
    "vllm-0.5": (
        400,
        {
            "object": "error",
            "message": "[{'type': 'literal_error', 'loc': ('body', 'response_format', 'type'), "
            "'msg': \"Input should be 'text' or 'json_object'\", 'input': 'json_schema', "
            "'ctx': {'expected': \"'text' or 'json_object'\"}}]",
            "type": "BadRequestError",
            "param": None,
            "code": 400,
        },
    ),
}
STRUCTURED_PROFILES = ("full", "llama.cpp", "vllm-0.5", "ollama-0.4", "none")


def format_type(body: JSONObject) -> str | None:
    fmt = body.get("response_format")
    return str(fmt.get("type")) if isinstance(fmt, dict) else None


def refusal(profile: str, body: JSONObject) -> tuple[int, JSONObject] | None:
    kind = format_type(body)
    if profile == "none" and kind not in (None, "text"):
        return 400, error_body(f"response_format {kind!r} is not supported", "invalid_request")
    if kind == "json_schema" and profile in REFUSALS:
        return REFUSALS[profile]
    return None


def ignores_schema(profile: str, body: JSONObject) -> bool:
    return profile == "ollama-0.4" and format_type(body) == "json_schema"


def error_body(message: str, kind: str, code: str | None = None) -> JSONObject:
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}
