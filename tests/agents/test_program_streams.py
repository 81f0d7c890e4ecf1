"""The input streams a pick among programs runs every draft on: the worked examples first,
then mutations that stay within the stated input format (no sandbox: text in, text out)."""

from __future__ import annotations

import random

from codegen.agents.pick.inputs import StreamBudget, stream_inputs
from codegen.agents.pick.inputs.streams import mutated
from codegen.agents.spec import ProgramSpec

MEDIAN_FORMAT = (
    "The first line holds n (1 ≤ n ≤ 100). The second line holds n integers a_i (1 ≤ a_i ≤ 10^9)."
)


def _program(input_format: str, *stdins: str, reads: list[str] | None = None) -> ProgramSpec:
    return ProgramSpec.model_validate(
        {
            "name": "tool",
            "usage": "tool < input",
            "reads": reads or ["stdin"],
            "writes": ["stdout"],
            "input_format": input_format,
            "output_format": "one line",
            "examples": [{"stdin": s, "stdout": "x\n"} for s in stdins],
        }
    )


def _lists(text: str) -> tuple[int, list[int]]:
    head, body = text.rstrip("\n").split("\n")
    return int(head), [int(t) for t in body.split()]


def test_examples_come_first_then_count_consistent_mutations_within_the_lists_range() -> None:
    program = _program(MEDIAN_FORMAT, "5\n5 1 4 2 3\n", "3\n10 20 30\n")
    inputs = stream_inputs(program)
    assert [(i.stdin, i.origin) for i in inputs[:2]] == [
        ("5\n5 1 4 2 3\n", "example"),
        ("3\n10 20 30\n", "example"),
    ]
    mutations = inputs[2:]
    assert 0 < len(mutations) <= StreamBudget().max_mutations
    assert {i.origin for i in mutations} == {"mutation"}
    assert len({i.stdin for i in inputs}) == len(inputs)  # no input twice
    for found in mutations:
        count, values = _lists(found.stdin)
        assert count == len(values) and 1 <= count <= 100  # the count line kept consistent
        assert len(set(values)) == len(values)  # the examples' lists are distinct: so are these
        # every value within the range of the example list it came from
        assert all(1 <= v <= 5 for v in values) or all(10 <= v <= 30 for v in values)
    # sorted examples stay sorted (the format may need it): [10, 20, 30] is never reordered
    for found in mutations:
        _, values = _lists(found.stdin)
        if values[0] >= 10:
            assert values == sorted(values)
    assert stream_inputs(program) == inputs  # deterministic for the task


def test_a_count_of_record_lines_follows_the_records() -> None:
    program = _program("n, then n lines of two integers", "3\n1 2\n3 4\n5 6\n")
    for found in stream_inputs(program)[1:]:
        lines = found.stdin.rstrip("\n").split("\n")
        assert int(lines[0]) == len(lines) - 1 >= 1
        assert set(lines[1:]) <= {"1 2", "3 4", "5 6"}  # records kept whole, only moved or gone


def test_what_cannot_be_shown_valid_is_not_mutated() -> None:
    rng = random.Random(0)
    # scalars: their range is the format's prose
    assert all(mutated("3 4\n", "two integers a and b", rng) is None for _ in range(20))
    # a grid: a row is not a list of its own (m would disagree with it); rows are records
    grid = "2 3\n1 2 3\n4 5 6\n"
    for _ in range(20):
        text = mutated(grid, "n rows of m integers", rng) or grid
        head, *rows = text.rstrip("\n").split("\n")
        assert head == f"{len(rows)} 3" and set(rows) <= {"1 2 3", "4 5 6"}
    # a permutation keeps its values; in a stated order nothing is reordered
    perm = "4\n2 4 1 3\n"
    for _ in range(20):
        text = mutated(perm, "a permutation p of 1..n", rng)
        assert text is None or sorted(_lists(text)[1]) == [1, 2, 3, 4]
    for _ in range(20):
        text = mutated("4\n1 3 4 7\n", "n integers in increasing order", rng)
        values = _lists(text)[1] if text else [1]
        assert values == sorted(set(values))
    # a stated lower bound on a count: n = 2 with 2 ≤ n keeps two elements
    for _ in range(20):
        text = mutated("2\n7 9\n", "2 ≤ n ≤ 10, then n integers", rng)
        assert text is None or _lists(text)[0] >= 2
    # a count the format says is odd keeps its value
    for _ in range(20):
        text = mutated("3\n4 8 6\n", "n (odd), then n integers", rng)
        assert text is None or _lists(text)[0] == 3
    # a connected graph's edges are reordered, never dropped
    edges = "3\n1 2\n2 3\n1 3\n"
    for _ in range(20):
        text = mutated(edges, "m edges of a connected graph", rng)
        assert text is None or text.startswith("3\n")
    # a word in a format about palindromes is left as it is
    assert all(mutated("abba\n", "a palindrome s", rng) is None for _ in range(20))


def test_programs_reading_files_or_nothing_get_only_their_examples() -> None:
    files = _program(MEDIAN_FORMAT, "3\n1 2 3\n", reads=["files"])
    assert [i.origin for i in stream_inputs(files)] == ["example"]
    args_only = _program("", "", reads=["arguments"])
    assert [i.origin for i in stream_inputs(args_only)] == ["example"]


def test_a_word_keeps_its_length_and_letters() -> None:
    program = _program("a string s of lowercase letters", "hello\n")
    mutations = stream_inputs(program)[1:]
    assert mutations
    assert all(sorted(i.stdin.strip()) == sorted("hello") for i in mutations)


def test_bounded_in_number_and_in_the_size_of_what_is_mutated() -> None:
    big = "3\n" + " ".join(["1", "2", "3"]) + "\n" + "x" * 5000
    program = _program(MEDIAN_FORMAT, big)
    assert [i.origin for i in stream_inputs(program)] == ["example"]
    few = stream_inputs(_program(MEDIAN_FORMAT, "5\n5 1 4 2 3\n"), StreamBudget(max_mutations=3))
    assert len(few) == 4


def test_runs_grouped_by_output_under_the_comparison_and_exit_status() -> None:
    from codegen.agents.pick.programs import program_table
    from codegen.sandbox.programs import NEVER_RAN, RunSeen

    def ran(tokens: str, exit_code: int = 0) -> RunSeen:
        return RunSeen(exit_code, digest=tokens, prefix=tokens, tokens=tokens)

    program = _program("", "1\n").model_copy(update={"comparison": "float"})
    runs = [
        [ran("0.3333333"), ran("1", exit_code=2), ran("")],
        [ran("0.33333331"), ran("1", exit_code=2), ran("")],  # within the tolerance
        [ran("0.34"), RunSeen(timed_out=True), NEVER_RAN],
        None,  # no code
    ]
    table = program_table(runs, program, silent_is_error=True)
    first, exits, silent = zip(*table.classes, strict=True)
    assert first[0] == first[1] >= 0 and first[2] >= 0 and first[2] != first[0]
    assert first[3] == -1 and table.labels[0][first[3]] == "no code"
    assert table.labels[0][first[0]] == "'0.3333333'"
    # a non-zero exit is an error unless the program's exit code is part of its output
    assert exits[:3] == (-1, -1, -2) and table.labels[1][-1] == "exit 2"
    with_exit = program.model_copy(update={"writes": ["stdout", "exit_code"]})
    shown = program_table(runs, with_exit, silent_is_error=True)
    assert [row[1] for row in shown.classes][:2] == [0, 0]
    assert shown.labels[1][0] == "'1' (exit 2)"
    # printing nothing where every example prints is an error; a stream never run is unknown
    assert silent == (-1, -1, -4, -1)
    assert program_table(runs, program, silent_is_error=False).classes[0][2] >= 0


def test_a_literal_list_keeps_its_length_and_range_and_other_lines_their_spacing() -> None:
    program = _program("a list of integers, then a word", "[3, 1, 2, 5]\nhello   world\n")
    mutations = [i.stdin for i in stream_inputs(program)[1:]]
    assert mutations
    for text in mutations:
        first, second = text.rstrip("\n").split("\n")
        values = [int(v) for v in first.strip("[]").split(", ")]
        assert len(values) == 4 and all(1 <= v <= 5 for v in values)
        assert len(set(values)) == 4  # the example's values are distinct: so are these
        assert second == "hello   world"  # a line no mutation touched, spacing and all
