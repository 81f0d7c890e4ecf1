"""What docs/results.md says of the picking runs' stored JSON files (MapCoder's HumanEval and
MBPP runs, ClassEval's candidate sets, the every-set table): part of ``results_descriptions``.
Key paths are dotted; a list value is printed whole."""

from __future__ import annotations

from benchmarks.results_rows import MAPCODER_APPS_RUNS, Description, Row

# learned_pick's table, the same for every task set it runs on.
LEARNED_PICK_ROWS = (
    Row("held-out tasks", "held_out.tasks"),
    Row("held out: learned pick", "held_out.learned", "best single", "held_out.best_single"),
    Row("held out: oracle", "held_out.oracle"),
    Row("all: learned pick", "all.learned", "best single", "all.best_single"),
    Row("all: first pick (equal votes)", "all.first_pick", "random", "all.random"),
    Row("all: oracle", "all.oracle"),
    Row("re-pick share of the evaluation's wall time", "eval.repick_share"),
    Row("replay requests during the re-pick", "replay_requests_during_repick"),
)

# The picks every MapCoder selection run stores (benchmarks.pick.selection --mapcoder), for
# HumanEval and MBPP alike.
MAPCODER_PICK_ROWS = (
    Row(
        "solved, weighted_checks (the crew's rule)",
        "solved.weighted_checks",
        "best single run",
        "solved.best_single",
    ),
    Row("solved, random pick", "solved.random", "oracle", "solved.oracle"),
    Row("solved, CodeT's dual agreement", "solved.codet"),
    Row("every rule as before the move", "before_the_one_home_move.identical_to_this_run"),
)
# The winning group's member taken by typicality against the crew's earlier way
# (benchmarks.pick.selection --mapcoder, group_member_solved), for HumanEval and MBPP alike.
GROUP_MEMBER_ROWS = (
    Row(
        "solved, agreement, the winning group's most typical member",
        "group_member_solved.agreement.typical",
        "its earliest",
        "group_member_solved.agreement.earliest",
    ),
    Row(
        "solved, weighted_checks, the most reliable then most typical member",
        "group_member_solved.weighted_checks.typical",
        "then earliest",
        "group_member_solved.weighted_checks.earliest",
    ),
)


def apps_alone_rows() -> tuple[Row, ...]:
    """Per run alone: the crew beside the run's own programs, and the tasks it lost."""
    rows: list[Row] = []
    for label in MAPCODER_APPS_RUNS:
        key = f"all.single_{label}"
        rows += [
            Row(f"{label} alone: the crew", f"{key}.crew", "its programs", f"{key}.plain"),
            Row(f"{label} alone: tasks below its programs", f"{key}.below_plain_tasks"),
        ]
    return tuple(rows)


PICK_DESCRIPTIONS: dict[str, Description] = {
    "apps_replay_crew": Description(
        title="APPS through the whole crew by replay",
        module="benchmarks.crew.apps_replay_crew",
        what=(
            "MapCoder's six recorded APPS runs (128 tasks) each alone through the crew, and the"
            " five ChatGPT runs as five candidates, each as a user runs it: `codegen replay"
            " import --format mapcoder` (the programmer's raw final reply; the analyzer's program"
            " spec and the `program.check` tests derived from each task's description and"
            " visible examples only), `codegen replay serve`, one `codegen eval apps` (for the"
            " five: `--candidates 5` with each run's model named in `[llm] candidates`, no"
            " reliability given; the evaluation re-picks at its end, the pick shown). The crew's"
            " final program, its first pick and each run's own final program (`source_codes[-1]`)"
            " scored in the same run by the APPS scorer (every hidden input on stdin, trailing"
            " whitespace ignored, 4 s per input). The 40 held-out tasks (seed 47) come first;"
            " per run alone, the tasks where the crew is below the run's own programs (their"
            " causes are in the JSON)."
        ),
        rows=(
            Row("held-out tasks", "held_out.tasks"),
            Row(
                "held out: five ChatGPT runs named, the learned pick",
                "held_out.five_chatgpt.ours",
                "best single run",
                "held_out.five_chatgpt.best_single",
            ),
            Row(
                "held out: five ChatGPT runs, first pick",
                "held_out.five_chatgpt.first_pick",
                "oracle",
                "held_out.five_chatgpt.oracle",
            ),
            Row("held out: five ChatGPT runs, random", "held_out.five_chatgpt.random"),
            Row("tasks", "all.tasks"),
            Row(
                "all: five ChatGPT runs named, the learned pick",
                "all.five_chatgpt.ours",
                "best single run",
                "all.five_chatgpt.best_single",
            ),
            Row(
                "all: five ChatGPT runs, first pick",
                "all.five_chatgpt.first_pick",
                "oracle",
                "all.five_chatgpt.oracle",
            ),
            Row("all: five ChatGPT runs, random", "all.five_chatgpt.random"),
            Row("all: picks the re-pick moved", "all.five_chatgpt.moved"),
            *apps_alone_rows(),
        ),
    ),
    "classeval_replay_crew": Description(
        title="ClassEval through the whole crew by replay",
        module="benchmarks.crew.classeval_replay_crew",
        what=(
            "The five greedy `class_H` reply files each alone through the crew; the five as five"
            " candidates per task and each `t0.2` file's five samples as five candidates, each"
            " run as a user runs it: one `codegen eval classeval --candidates 5` with every"
            " candidate's model named in `[llm] candidates` (five greedy files: five models; a"
            " t0.2 file: one model five times), the evaluation estimating each model's"
            " reliability and re-picking at its end (the pick shown; `first pick` is the crew's"
            " during the run). The crew's final code and every raw reply (read by the authors'"
            " rules) scored in the same run by the ClassEval scorer. `plain` is a file's own"
            " score, `random` the mean over the candidates, pass@5 the oracle of five samples."
            " The 30 held-out tasks (seed 37) come first, then all 100; then the estimates and,"
            " per pick the re-pick moved, the rule and evidence that moved it."
        ),
        rows=(
            Row("held-out tasks", "held_out.tasks"),
            Row(
                "held out: five greedy files named, the learned pick",
                "held_out.five_greedy.ours",
                "best single file",
                "held_out.five_greedy.best_single",
            ),
            Row(
                "held out: five greedy files, first pick",
                "held_out.five_greedy.first_pick",
                "oracle",
                "held_out.five_greedy.oracle",
            ),
            Row(
                "held out: GPT-3.5-Turbo t0.2, the pick",
                "held_out.t02_GPT-35-Turbo.ours",
                "pass@1",
                "held_out.t02_GPT-35-Turbo.pass@1",
            ),
            Row(
                "held out: Gemini-Pro t0.2, the pick",
                "held_out.t02_Gemini-Pro.ours",
                "pass@1",
                "held_out.t02_Gemini-Pro.pass@1",
            ),
            Row("tasks", "all.tasks"),
            *(
                Row(
                    f"{label} alone through the crew",
                    f"all.single_{key}.crew",
                    "plain",
                    f"all.single_{key}.plain",
                )
                for label, key in (
                    ("Gemini-Pro", "Gemini-Pro"),
                    ("deepseek-coder-6.7b-instruct", "deepseek-coder-67b-instruct"),
                    ("GPT-3.5-Turbo", "GPT-35-Turbo"),
                    ("Magicoder-S-DS-6.7B", "Magicoder-S-DS-67B"),
                    ("WizardCoder-15B-V1.0", "WizardCoder-15B-V10"),
                )
            ),
            Row(
                "five greedy files named, the learned pick",
                "all.five_greedy.ours",
                "best single file",
                "all.five_greedy.best_single",
            ),
            Row(
                "five greedy files, first pick",
                "all.five_greedy.first_pick",
                "random",
                "all.five_greedy.random",
            ),
            Row("five greedy files, oracle", "all.five_greedy.oracle"),
            Row(
                "GPT-3.5-Turbo t0.2, the pick",
                "all.t02_GPT-35-Turbo.ours",
                "pass@1",
                "all.t02_GPT-35-Turbo.pass@1",
            ),
            Row("GPT-3.5-Turbo t0.2, pass@5", "all.t02_GPT-35-Turbo.pass@5"),
            Row(
                "Gemini-Pro t0.2, the pick",
                "all.t02_Gemini-Pro.ours",
                "pass@1",
                "all.t02_Gemini-Pro.pass@1",
            ),
            Row("Gemini-Pro t0.2, pass@5", "all.t02_Gemini-Pro.pass@5"),
            Row(
                "held out: five greedy files named, the rule before (votes weighed by whole-class"
                " estimates)",
                "rule_before_issue_48.held_out.five_greedy.ours",
                "picks it moved",
                "rule_before_issue_48.held_out.five_greedy.moved",
            ),
            Row(
                "all: five greedy files named, the rule before",
                "rule_before_issue_48.all.five_greedy.ours",
                "picks it moved",
                "rule_before_issue_48.all.five_greedy.moved",
            ),
            Row("five greedy files: each model's estimate", "estimates_shown.five_greedy"),
            Row("five greedy files: picks the re-pick moved", "all.five_greedy.moved"),
            Row("five greedy files: each moved pick and why", "moved_shown.five_greedy"),
        ),
    ),
    "pick_every_set": Description(
        title="The pick on every multi-candidate set, held-out tasks first",
        module="benchmarks.pick.every_set",
        what=(
            "A selection rule ships only if its pick is not below the best single run (several"
            " models) or pass@1 (five samples of one model) on the held-out part of every set:"
            " MapCoder HumanEval (five runs, 40 held out, seed 41), MapCoder MBPP (three runs,"
            " 100 held out, seed 43), ClassEval's five greedy files named as five models and each"
            " t0.2 file's five samples (30 held out, seed 37), MapCoder's five ChatGPT APPS runs"
            " named as five models (40 held out, seed 47). Each set's figures are read from"
            " the JSON its own script stored (`learned_pick_humaneval`, `learned_pick_mbpp`,"
            " `classeval_replay_crew`, `apps_replay_crew`)."
        ),
        rows=(
            *(
                row
                for key, label in (
                    ("humaneval_mapcoder_five_runs", "HumanEval, five MapCoder runs"),
                    ("mbpp_mapcoder_three_runs", "MBPP, three MapCoder runs"),
                    ("classeval_five_greedy", "ClassEval, five greedy files named"),
                    ("classeval_t02_GPT-35-Turbo", "ClassEval, GPT-3.5-Turbo t0.2 samples"),
                    ("classeval_t02_Gemini-Pro", "ClassEval, Gemini-Pro t0.2 samples"),
                    ("apps_chatgpt_five_runs", "APPS, five ChatGPT runs named"),
                )
                for row in (
                    Row(
                        f"held out: {label}",
                        f"sets.{key}.held_out.pick",
                        "baseline",
                        f"sets.{key}.held_out.baseline",
                    ),
                    Row(
                        f"all: {label}",
                        f"sets.{key}.all.pick",
                        "baseline",
                        f"sets.{key}.all.baseline",
                    ),
                )
            ),
            Row("ships (held out not below the baseline on every set)", "ships"),
        ),
    ),
    "learned_pick_mbpp": Description(
        title="One evaluation that learns whom to trust among three models (MBPP)",
        module="benchmarks.pick.learned_pick",
        what=(
            "`codegen eval mbpp --candidates 3` against a replay of MapCoder's three recorded"
            " runs of the 397-task set, one model name per run and no reliability given; as for"
            " HumanEval. The 100 tasks held out by seed 43 (drawn before the dominance rule looked"
            " at MBPP) come first."
        ),
        rows=LEARNED_PICK_ROWS,
    ),
    "learned_pick_humaneval": Description(
        title="One evaluation that learns whom to trust among five models (HumanEval)",
        module="benchmarks.pick.learned_pick",
        what=(
            "`codegen eval humaneval --candidates 5` against a replay of MapCoder's five recorded"
            " runs, one model name per run and no reliability given: the evaluation picks with"
            " equal votes, estimates each model's reliability over its own selection records and"
            " re-picks every task at its end. Every draft is scored on the hidden tests only"
            " afterwards, for each run alone, the best single run and the oracle. The 40 tasks"
            " held out when the rule was written (seed 41) come first."
        ),
        rows=LEARNED_PICK_ROWS,
    ),
    "selection_mapcoder_mbpp": Description(
        title="Picking among three models' MBPP code by execution",
        module="benchmarks.pick.selection",
        what=(
            "The same as for HumanEval, on MapCoder's three recorded runs of the 397-task MBPP"
            " set (the visible example from the task set's `sample_io`). The same script at the"
            " commit before evaluation moved into one slice gives the same figures for every"
            " rule, and the first recorded figure for the crew's rule is beside them. A later"
            " run (`group_member_run`) takes the winning group's member by typicality too, as"
            " for HumanEval."
        ),
        rows=(
            Row("tasks", "tasks"),
            *MAPCODER_PICK_ROWS,
            Row("solved, weighted_checks, first recorded", "first_recorded.weighted_checks"),
            *GROUP_MEMBER_ROWS,
        ),
    ),
    "selection_mapcoder_humaneval": Description(
        title="Picking among five models' HumanEval code by execution",
        module="benchmarks.pick.selection",
        what=(
            "MapCoder's five recorded HumanEval runs (their extracted code) as five candidates"
            " per task; every rule picks from the same sandbox executions (worked examples and"
            " shared inputs, never the hidden tests). `solved` counts expected correct picks."
            " The same script at the commit before evaluation moved into one slice gives the"
            " same figures for every rule; the first recorded run (an older example reader that"
            " found examples in 108 prompts) is beside it. A later run of the same script"
            " (`group_member_run`, every other figure identical) also takes the winning group's"
            " member as the crew does now, the most typical code (tuned on ClassEval, never on"
            " these runs), beside the crew's earlier way; `solved` above counts a random member"
            " for the rules without reliabilities."
        ),
        rows=(
            Row("tasks", "tasks"),
            Row("prompts with worked examples read", "tasks_with_examples"),
            *MAPCODER_PICK_ROWS,
            Row(
                "solved, weighted_checks, first recorded",
                "as_first_recorded.solved.weighted_checks",
            ),
            *GROUP_MEMBER_ROWS,
        ),
    ),
}
