"""Structured Outputs on every server: json_schema, then json_object with the schema in the
prompt, then plain prompting; the working mode is remembered per endpoint and model. The
loopback servers refuse json_schema with the real error bodies of llama.cpp and old vLLM,
or ignore it as old Ollama did."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from codegen.agents.llm import LLMClient, Meter, StructuredMode, StructuredModes
from codegen.agents.roles import analyze
from codegen.replay.scripted import PRIMES_SPEC, ScriptedOpenAIServer


def client(server: ScriptedOpenAIServer, modes: Path) -> LLMClient:
    return LLMClient(
        base_url=server.base_url, api_key="sk-test", max_retries=1, timeout_s=10, modes_file=modes
    )


def formats(server: ScriptedOpenAIServer) -> list[str | None]:
    return [
        (r.body or {}).get("response_format", {}).get("type")
        if (r.body or {}).get("response_format")
        else None
        for r in server.requests
    ]


@pytest.mark.parametrize(
    ("profile", "first_formats", "working"),
    [
        ("full", ["json_schema"], StructuredMode.JSON_SCHEMA),
        # llama.cpp answers 500, which the SDK retries once before we fall back.
        ("llama.cpp", ["json_schema", "json_schema", "json_object"], StructuredMode.JSON_OBJECT),
        ("vllm-0.5", ["json_schema", "json_object"], StructuredMode.JSON_OBJECT),
        # Old Ollama ignores the schema: the fenced JSON is read, json_object is remembered.
        ("ollama-0.4", ["json_schema"], StructuredMode.JSON_OBJECT),
        ("none", ["json_schema", "json_object", None], StructuredMode.PROMPT),
    ],
)
def test_every_server_gets_the_spec_and_the_working_mode_is_remembered(
    tmp_path: Path, profile: str, first_formats: list[str | None], working: StructuredMode
) -> None:
    modes = tmp_path / "modes.json"
    with ScriptedOpenAIServer(
        handler=lambda role, body: PRIMES_SPEC, structured_outputs=profile
    ) as server:
        llm = client(server, modes)
        first = analyze(llm, Meter(), "primes up to n")
        assert first.spec.functions[0].name == "primes_up_to"
        assert formats(server) == first_formats
        sent_first = len(server.requests)
        # A later process reads the remembered mode and asks in it straight away.
        second = analyze(client(server, modes), Meter(), "primes below n")
        later = formats(server)[sent_first:]
    assert second.structured_outputs == working.value
    expected_format = None if working is StructuredMode.PROMPT else working.value
    assert later == [expected_format]
    key = StructuredModes.key(llm.endpoint, "gpt-4o-mini")
    assert json.loads(modes.read_text()) == {key: working.value}
    last_prompt = server.requests[-1].prompt_text
    assert ("matching this" in last_prompt or "match this" in last_prompt) == (
        working is not StructuredMode.JSON_SCHEMA
    )


def test_an_unrelated_server_error_is_not_mistaken_for_a_refusal(tmp_path: Path) -> None:
    from codegen.agents.llm import LLMError
    from codegen.replay.scripted import Reply

    script = {"analyzer": [Reply.error(503, "overloaded", {"Retry-After": "0"})] * 2}
    with ScriptedOpenAIServer(script=script) as server:
        with pytest.raises(LLMError, match="HTTP 503"):
            analyze(client(server, tmp_path / "m.json"), Meter(), "primes")
        assert formats(server) == ["json_schema", "json_schema"]
    assert not (tmp_path / "m.json").exists()


def test_codegen_info_shows_the_mode_the_crew_found(isolated_home: Path) -> None:
    import os
    import shutil
    import subprocess
    import sys

    from codegen.assets.resources import LLMResource
    from codegen.settings import get_settings

    with ScriptedOpenAIServer(
        handler=lambda role, body: PRIMES_SPEC, structured_outputs="vllm-0.5"
    ) as server:
        resource = LLMResource.from_settings(get_settings()).model_copy(
            update={"base_url": server.base_url, "max_retries": 0}
        )
        analyze(resource.client(), Meter(), "primes up to n")
    codegen = shutil.which("codegen", path=str(Path(sys.executable).parent)) or "codegen"
    shown = subprocess.run(
        [codegen, "info", "--json"], capture_output=True, text=True, env=dict(os.environ)
    )
    assert shown.returncode == 0, shown.stderr
    key = f"{server.base_url} gpt-4o-mini"
    assert json.loads(shown.stdout)["structured_outputs"] == {key: "json_object"}
    text = subprocess.run([codegen, "info"], capture_output=True, text=True, env=dict(os.environ))
    assert f"json mode     json_object for {key}" in text.stdout
