"""What a person sees of a program's runs: the candidate's stdout (and the spec's texts) in a
terminal line and in the UI's Markdown, shown as text, never acted on."""

from __future__ import annotations

import unicodedata

from codegen.agents.report import module_lines, program_run_lines
from codegen.assets.codegen_metadata import _md_lines

# What a hostile program may print: a colour change, a cursor move, a bell, a carriage
# return that overwrites the line, a NUL, a right-to-left override, a line separator.
HOSTILE = "ok\x1b[31mRED\x1b[2J\a\rforged\x00\u202eevil\u2028next\x7f\x9b"


def _raw_controls(text: str) -> list[str]:
    return [ch for ch in text if unicodedata.category(ch) in ("Cc", "Cf", "Zl", "Zp")]


def test_a_runs_line_shows_control_characters_escaped() -> None:
    run = {
        "test": "test_solution.py::test_x",
        "outcome": "failed",
        "stdin": "1\t2\n",
        "arguments": ["-n\x1b]0;title\x07"],
        "expected_stdout": "3\n",
        "stdout": HOSTILE,
        "exit_code": 0,
        "expected_exit_code": 0,
    }
    (line,) = program_run_lines([run])
    assert not _raw_controls(line), line
    assert "\\x1b[31mRED" in line and "\\rforged" in line and "\\x00" in line
    assert "\\u202eevil" in line and "stdin '1\\t2\\n'" in line


def test_a_programs_interface_is_shown_escaped() -> None:
    program = {
        "name": "top\x1b[2J",
        "usage": "top\x1b[2J FILE",
        "reads": ["stdin"],
        "writes": ["stdout"],
        "comparison": "exact",
        "input_format": "n\rthen",
        "output_format": "",
    }
    lines = module_lines({"program": program})
    assert not any(_raw_controls(line) for line in lines), lines
    assert lines[0] == "program top\\x1b[2J FILE"


def test_a_markdown_line_keeps_backticks_inside_its_code_span() -> None:
    """A printed backtick must not close the span and turn the rest into Markdown (a remote
    image the UI would fetch, a link)."""
    line = "stdout 'a` ![x](http://example.invalid/x.png) ``[y](http://example.invalid)'"
    shown = _md_lines([line], "_(none)_").value
    assert shown.startswith("- ```") and shown.endswith("```")
    inner = shown[len("- ```") : -len("```")]
    assert inner.strip() == line and "```" not in inner, shown


def test_a_killed_run_says_why_it_has_no_exit_code() -> None:
    case = {"test": "test_solution.py::test_x", "outcome": "failed", "stdin": ""}
    capped = {**case, "stdout": "y" * 10, "exit_code": None, "output_capped": True}
    timed = {**case, "stdout": "", "exit_code": None, "timed_out": True}
    lines = program_run_lines([{**capped, "expected_exit_code": 0}, timed])
    assert lines[0].endswith("killed: stdout past the cap (expected 0)"), lines
    assert lines[1].endswith("timed out") and not any("None" in line for line in lines)
