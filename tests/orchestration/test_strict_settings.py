"""Strict settings (issue 49, point 2): a typo in ``codegen.toml`` or in a
``CODEGEN_<SECTION>__<KEY>`` variable, a value of the wrong type or out of range, stops every
command with one line naming the file or the variable, the key and the nearest valid name, never
the value given; the other ``CODEGEN_*`` variables are not settings and pass untouched."""

from __future__ import annotations

import re
import typing
from pathlib import Path

import pytest
from pydantic import BaseModel

from codegen.orchestration.cli import main
from codegen.settings import BadSettings, Settings, get_settings, load_settings
from tests.orchestration.test_cli import run_cli

REPO = Path(__file__).resolve().parents[2]
# A value that must never be echoed (it could be a key pasted into the wrong place).
CANARY = "sk-canary-3141592653"


def configure(home: Path, text: str) -> Path:
    path = home / "codegen.toml"
    path.write_text(text)
    get_settings.cache_clear()
    return path


def refusal(capsys: pytest.CaptureFixture[str]) -> str:
    """The one line `codegen info` stops with (exit 2)."""
    assert main(["info"]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("codegen: error: bad settings:"), lines
    assert CANARY not in lines[0], lines
    return lines[0]


def test_a_misspelt_key_stops_the_cli_with_one_line_naming_the_file_and_the_right_key(
    isolated_home: Path,
) -> None:
    path = configure(isolated_home, f'[llm.default]\nmodle = "{CANARY}"\n')
    result = run_cli("info")
    assert result.returncode == 2, result.stderr
    assert result.stdout == ""
    assert result.stderr.splitlines() == [
        f"codegen: error: bad settings: unknown key 'modle' in [llm.default] of {path} "
        "(did you mean 'model'?)"
    ]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("[lmm]\nmax_rounds = 2\n", "unknown section [lmm] in {path} (did you mean [llm]?)"),
        (
            "max_rounds = 2\n",  # a key of [llm] written above every table
            "unknown key 'max_rounds' at the top of {path} (did you mean [llm] max_rounds?)",
        ),
        (
            '[llm.agents.programer]\nmodel = "x"\n',
            "unknown key 'programer' in [llm.agents] of {path} (did you mean 'programmer'?)",
        ),
        ("[llm]\nmax_rounds = 0\n", "[llm] max_rounds of {path}: Input should be greater than"),
        ("[llm]\nmax_rounds = 21\n", "[llm] max_rounds of {path}: Input should be less than"),
        (
            f'[llm]\nmax_rounds = "{CANARY}"\n',
            "[llm] max_rounds of {path}: Input should be a valid integer",
        ),
        ("[eval]\ntimeout_s = 0\n", "[eval] timeout_s of {path}: Input should be greater than 0"),
        (
            "[corpus.github]\nmax_issues = -1\n",
            "[corpus.github] max_issues of {path}: Input should be greater than or equal to 1",
        ),
        (
            f'[llm]\nbase_url = "https://u:{CANARY}@api.example/v1"\n',
            "[llm] base_url of {path}: holds credentials",
        ),
        (
            "[llm.prices.my-model]\ninpt = 1.0\noutput = 2.0\n",
            "[llm] prices of {path}: my-model: unknown key 'inpt' (did you mean 'input'?)",
        ),
    ],
)
def test_the_file_is_refused_in_one_line_for_an_unknown_name_a_type_or_a_range(
    text: str, expected: str, isolated_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = configure(isolated_home, text)
    with pytest.raises(BadSettings):
        load_settings()
    line = refusal(capsys)
    assert expected.format(path=path) in line, line


@pytest.mark.parametrize(
    ("variable", "value", "expected"),
    [
        (
            "CODEGEN_LLM__MAX_ROUNDS",
            "abc",
            "[llm] max_rounds from CODEGEN_LLM__MAX_ROUNDS: Input should be a valid integer",
        ),
        (
            "CODEGEN_LLM__MAX_ROUNDS",
            "0",
            "[llm] max_rounds from CODEGEN_LLM__MAX_ROUNDS: Input should be greater than",
        ),
        ("CODEGEN_LLM__MODLE", CANARY, "unknown key 'modle' in [llm] from CODEGEN_LLM__MODLE"),
        (
            "CODEGEN_LLM__DEFAULT__MODLE",
            CANARY,
            "unknown key 'modle' in [llm.default] from CODEGEN_LLM__DEFAULT__MODLE "
            "(did you mean CODEGEN_LLM__DEFAULT__MODEL?)",
        ),
        (
            "CODEGEN_LMM__MAX_ROUNDS",
            "3",
            "unknown section [lmm] from CODEGEN_LMM__MAX_ROUNDS "
            "(did you mean CODEGEN_LLM__MAX_ROUNDS?)",
        ),
        ("CODEGEN_ENV", "prod", "env from CODEGEN_ENV: Input should be 'local' or 'production'"),
    ],
)
def test_a_setting_variable_is_refused_in_one_line_naming_the_variable(
    variable: str,
    value: str,
    expected: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv(variable, value)
    assert expected in refusal(capsys)


def _non_setting_variables() -> set[str]:
    """Every ``CODEGEN_*`` name the project reads or documents without the ``__`` separator."""
    names: set[str] = set()
    files = [*REPO.glob("codegen/**/*.py"), *REPO.glob("docs/*.md"), *REPO.glob("tests/**/*.py")]
    files += [REPO / "Makefile", REPO / "README.md", REPO / ".ci" / "run"]
    files += [p for p in REPO.glob("codegen/deploy/**/*") if p.is_file()]
    for path in files:
        names |= set(re.findall(r"\bCODEGEN_[A-Z0-9_]*[A-Z0-9]\b", path.read_text(errors="ignore")))
    return {n for n in names if "__" not in n} - {"CODEGEN_HOME", "CODEGEN_ENV"}


def test_only_section_key_variables_are_settings_and_the_others_pass_untouched(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    others = _non_setting_variables()
    # The ones the brief names, so the search above cannot quietly find none.
    assert {"CODEGEN_CONFIG", "CODEGEN_REQUIRE_DOCKER", "CODEGEN_SANDBOX_CACHE"} <= others
    for name in others - {"CODEGEN_CONFIG"}:  # CODEGEN_CONFIG names this test's file
        monkeypatch.setenv(name, "1")
    monkeypatch.setenv("CODEGEN_SANDBX__POOL_SIZE", "3")
    line = refusal(capsys)  # the one misspelt setting, and only it
    assert line.endswith(
        "unknown section [sandbx] from CODEGEN_SANDBX__POOL_SIZE "
        "(did you mean CODEGEN_SANDBOX__POOL_SIZE?)"
    ), line
    monkeypatch.delenv("CODEGEN_SANDBX__POOL_SIZE")
    monkeypatch.setenv("CODEGEN_SANDBOX__POOL_SIZE", "3")
    assert load_settings().sandbox.pool_size == 3


def test_every_problem_of_the_file_and_the_variables_in_the_one_line(
    isolated_home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path = configure(isolated_home, "[retrieval]\ntop_k = 0\n[review]\nmode = 'humans'\n")
    monkeypatch.setenv("CODEGEN_RETRIEVAL__TOP_K", "101")
    line = refusal(capsys)
    assert f"[retrieval] top_k of {path}: Input should be greater than or equal to 1" in line
    assert f"[review] mode of {path}: Input should be 'agent', 'human' or 'both'" in line
    assert "[retrieval] top_k from CODEGEN_RETRIEVAL__TOP_K: Input should be less than" in line


def _numbers(model: type[BaseModel], prefix: str) -> list[tuple[str, list[object]]]:
    out = []
    for name, field in model.model_fields.items():
        args = typing.get_args(field.annotation) or (field.annotation,)
        if any(isinstance(a, type) and issubclass(a, BaseModel) for a in args):
            nested = next(a for a in args if isinstance(a, type) and issubclass(a, BaseModel))
            out += _numbers(nested, f"{prefix}{name}.")
        elif any(a in (int, float) for a in args) and name != "candidates":
            out.append((f"{prefix}{name}", field.metadata))
    return out


def test_every_numeric_setting_has_a_range() -> None:
    # [llm] candidates is a number or a list: parse_candidates gives it its 1-20.
    unbounded = [
        name
        for name, rules in _numbers(Settings, "")
        if not any(getattr(r, a, None) is not None for r in rules for a in ("ge", "gt"))
    ]
    assert not unbounded


def test_a_command_that_reads_no_setting_is_stopped_too_and_help_still_answers(
    isolated_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = configure(isolated_home, "[llm]\nmax_rounds = 0\n")
    assert main(["replay", "serve", str(isolated_home / "recording.json")]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert lines == [
        f"codegen: error: bad settings: [llm] max_rounds of {path}: "
        "Input should be greater than or equal to 1"
    ]
    assert main(["replay", "serve", "--help"]) == 0
    assert "Usage: codegen replay serve" in capsys.readouterr().out
