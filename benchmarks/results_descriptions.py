"""What docs/results.md says of each stored JSON file under benchmarks/results/: its title, what
the run measured, and which figures it shows beside which baseline. The only hand-written part
of that page (``benchmarks.results_page`` checks every key against its file). The picks' runs
are described in ``results_pick_descriptions``; the shapes of both in ``results_rows``."""

from __future__ import annotations

from benchmarks.results_pick_descriptions import PICK_DESCRIPTIONS
from benchmarks.results_rows import MAPCODER_APPS_RUNS, Description, Row

__all__ = ["DESCRIPTIONS", "Description", "Row"]

# Keyed by the JSON file's stem. Key paths are dotted; a list value is printed whole.


def apps_rows() -> tuple[Row, ...]:
    """Per run: solved in the sandbox beside the plain run, and the file's own count."""
    rows: list[Row] = []
    for label in MAPCODER_APPS_RUNS:
        key = f"runs.{label}-APPS-Python3-0-1"
        solved = Row(f"{label}: solved", f"{key}.sandbox_solved", "plain", f"{key}.plain_solved")
        rows += [solved, Row(f"{label}: the file's own is_solved", f"{key}.file_is_solved")]
    return tuple(rows)


def apps_extraction_rows() -> tuple[Row, ...]:
    """Per run: replies whose extracted program is the harness's, of all the run's rows."""
    rows: list[Row] = []
    for label in MAPCODER_APPS_RUNS:
        key = f"runs.{label}-APPS-Python3-0-1"
        rows.append(Row(f"{label}: same program", f"{key}.matches", "rows", f"{key}.total"))
    return tuple(rows)


DESCRIPTIONS: dict[str, Description] = {
    "apps_extraction": Description(
        title="APPS: programs read from MapCoder's raw replies",
        module="benchmarks.crew.apps_extraction",
        what=(
            "Every final raw reply (`responses[-1]`) of MapCoder's six APPS runs read by the"
            " crew's reader for a spec with a program (no execution), against the program"
            " MapCoder's harness extracted from the same reply (`source_codes[-1]`), equal"
            " when their syntax trees are. The JSON lists each other reply with its cause: the"
            " reader refuses code that does not parse or only defines functions (which,"
            " run as a program, prints nothing)."
        ),
        rows=(
            Row("same program", "matches", "rows", "rows"),
            *apps_extraction_rows(),
        ),
    ),
    "cpu_default_build": Description(
        title="Index build on the CPU with the default embedder",
        module="benchmarks.corpus.cpu_default_build",
        what=(
            "A whole `sync_index` of standard-library chunks into a fresh LanceDB (tokenize,"
            " embed, write) by this checkout and by a baseline checkout, alternating in pairs"
            " in one run, and whether both write the same vectors. A ratio below 1 means this"
            " checkout was faster."
        ),
        rows=(
            Row("chunks", "chunks"),
            Row("wall seconds per pair", "seconds.ours", "baseline", "seconds.baseline"),
            Row("wall-time ratio per pair", "ratio_per_pair"),
            Row("wall-time ratio, median", "ratio_median"),
            Row("CPU seconds per pair", "cpu_seconds.ours", "baseline", "cpu_seconds.baseline"),
            Row("CPU-time ratio, median", "cpu_ratio_median"),
            Row("sample vectors identical to the baseline's", "sample_vectors_identical"),
        ),
    ),
    "crew_overhead": Description(
        title="A request's overhead outside model calls",
        module="benchmarks.crew.crew_overhead",
        what=(
            "A scripted endpoint answers every model call after 1 s; overhead is a request's"
            " wall time minus the time a model call was in flight. `codegen generate` (a fresh"
            " process per request, on the SQLite instance) against the same command at the"
            " commit before this work, run alternately in one run; beside them, the crew in"
            " one process without Dagster, and the request job run from a process that has"
            " everything loaded. Where the first stretch goes is read from the run's events;"
            " the import seconds come from one more request under `python -X importtime`."
            " [methods.md](methods.md#where-a-requests-overhead-goes) walks through it."
        ),
        rows=(
            Row(
                "`codegen generate`: overhead s per request, median of 3",
                "median_overhead_s.codegen_generate",
                "baseline commit",
                "median_overhead_s.baseline_generate",
            ),
            Row(
                "`codegen generate`: CPU s per request, median",
                "median_cpu_s.codegen_generate",
                "baseline commit",
                "median_cpu_s.baseline_generate",
            ),
            Row("target: at most 3.5 s, first calls overlapping", "target_met"),
            Row(
                "start to the run's first event (interpreter, imports, instance, code location)",
                "codegen_generate_profile_s.start -> run's first event",
                "baseline commit",
                "baseline_generate_profile_s.start -> run's first event",
            ),
            Row(
                "run's first event to the first step's start",
                "codegen_generate_profile_s.run's first event -> first step start",
                "baseline commit",
                "baseline_generate_profile_s.run's first event -> first step start",
            ),
            Row(
                "first step's start to the analyzer's call (the model SDK's import)",
                "codegen_generate_profile_s.first step start -> analyzer call",
                "baseline commit",
                "baseline_generate_profile_s.first step start -> analyzer call",
            ),
            Row(
                "between the analyzer's reply and the test designer's call",
                "codegen_generate_idle_gaps_s.analyzer -> test_designer",
                "baseline commit",
                "baseline_generate_idle_gaps_s.analyzer -> test_designer",
            ),
            Row(
                "between the programmer's reply and the reviewer's call (tests in the sandbox)",
                "codegen_generate_idle_gaps_s.programmer -> reviewer",
                "baseline commit",
                "baseline_generate_idle_gaps_s.programmer -> reviewer",
            ),
            Row(
                "between the reviewer's reply and the documenter's call (the checks)",
                "codegen_generate_idle_gaps_s.reviewer -> documenter",
                "baseline commit",
                "baseline_generate_idle_gaps_s.reviewer -> documenter",
            ),
            Row(
                "after the documenter's reply until the command exits",
                "codegen_generate_idle_gaps_s.documenter -> exit",
                "baseline commit",
                "baseline_generate_idle_gaps_s.documenter -> exit",
            ),
            Row("imports under `-X importtime`, s", "import_profile.total_s"),
            Row(
                "share of the package's modules with cached bytecode (`make venv` compiles it)",
                "bytecode_cached_share.codegen_generate",
                "baseline commit",
                "bytecode_cached_share.baseline_generate",
            ),
            Row(
                "the request job in an already loaded process: overhead s",
                "median_overhead_s.warm_process",
                "crew without Dagster",
                "median_overhead_s.in_process_loop",
            ),
            Row("baseline commit", "baseline_checkout.commit"),
            Row("load average (1, 5, 15 min) at start", "load_average_at_start"),
            Row("load average at end", "load_average_at_end"),
        ),
    ),
    "replay_crew": Description(
        title="The whole crew on recorded GPT-4 Turbo replies (HumanEval)",
        module="benchmarks.crew.replay_crew",
        what=(
            "`codegen eval humaneval` in crew mode against `codegen replay serve` of MapCoder's"
            " recorded GPT-4 Turbo replies: every agent runs, the programmer gets the reply"
            " recorded for its task, and the hidden tests score the crew's final code. The"
            " baseline is the recording's own published count of solved tasks. A task whose"
            " crew asks for a round the recording does not have ends `unrecorded`."
        ),
        rows=(
            Row("tasks", "tasks"),
            Row("solved", "solved_tasks", "published", "published_solved"),
            Row("pass@1", "pass_at_k.pass@1"),
            Row("programmer got its own task's reply", "programmer_reached_with_own_task_reply"),
            Row("crew statuses", "crew_statuses"),
        ),
    ),
    "gpu_corpus_build_store": Description(
        title="Writing embedded chunks to the store",
        module="benchmarks.corpus.gpu_corpus_build",
        what=(
            "The store side of the GPU corpus build alone (`--store-only`): upserting"
            " precomputed vectors into LanceDB and refreshing the index. No baseline was"
            " measured in this run."
        ),
        rows=(
            Row("chunks", "chunks"),
            Row("mean chunk characters", "mean_chunk_chars"),
            Row("upsert rows per second", "store.upsert_rows_per_s"),
            Row("upsert seconds", "store.upsert_seconds"),
            Row("refresh seconds", "store.refresh_seconds"),
        ),
    ),
    "gpu_corpus_build_tokenize_cpu": Description(
        title="Tokenizing for the device embedder",
        module="benchmarks.corpus.gpu_corpus_build",
        what=(
            "The tokenize stage of the GPU corpus build alone (`--tokenize-only`), with texts"
            " cut before the 128-token cap, against tokenizing whole texts in the same run."
        ),
        rows=(
            Row("chunks", "chunks"),
            Row(
                "chunks tokenized per second",
                "tokenize_chunks_per_s",
                "whole texts",
                "tokenize_whole_texts_chunks_per_s",
            ),
            Row("speedup from the cut", "tokenize_speedup_from_the_cut"),
        ),
    ),
    "verdict_payloads": Description(
        title="Attacks on the verdicts, before and after the fix",
        module="benchmarks.verdicts.payloads",
        what=(
            "Each numbered finding of the hostile review as a payload (a planted `__init__.py`, "
            "the test file swapped for a folder, a cross-sample plant, a class object forcing the"
            " old way in three scorers, a draft reading its siblings, each overridden resource "
            "field, deep and huge outputs, eight children over the job's memory, a 10,000-digit "
            "int, StopIteration, an unhashed package set, an inbox link, a negative Content-"
            "Length), run against two trees (the commit before the fix, a git worktree, and this "
            "one), on both sandbox backends where it runs in one. `succeeded` means the attack "
            "worked; `blocked` only when the defence was seen; `attacks` in the JSON lists each. "
            "The inbox link was refused before the first tree already (f0f8475); it succeeds at "
            "e0b7ad2."
        ),
        rows=(
            Row(
                "attacks succeeded after the fix",
                "after.succeeded",
                "before it",
                "before.succeeded",
            ),
            Row("attacks blocked after the fix", "after.blocked", "before it", "before.blocked"),
            Row("payload errors after the fix", "after.error", "before it", "before.error"),
        ),
    ),
    "apps_plain": Description(
        title="APPS: MapCoder's six runs scored in the sandbox beside a plain run",
        module="benchmarks.scoring.apps_plain",
        what=(
            "`codegen eval apps --samples-file` on each recorded MapCoder run of the 128 APPS"
            " tasks (each row's final program, `source_codes[-1]`): every hidden input on a"
            " fresh process's stdin behind the fence, stdout against the expected lines,"
            " trailing whitespace ignored, 4 s per input. The baseline is a plain run of the"
            " same programs on the same inputs in a plain container of the sandbox image"
            " (`python3 prog.py < input`, stdout only, the same limit), beside the file's own"
            " `is_solved`. The JSON lists every task where the three differ, with its cause."
        ),
        rows=(
            Row("load average at the start", "load_1m_at_start"),
            Row("time limit per input, s", "time_limit_s"),
            *apps_rows(),
        ),
    ),
    "classeval_scoring": Description(
        title="ClassEval scored in the Docker sandbox against the authors' table",
        module="benchmarks.scoring.classeval_scoring",
        what=(
            "`codegen eval classeval` on the reference solutions (`--canonical`) and on the"
            " authors' recorded replies (`--samples-file`): five greedy whole-class files and"
            " two five-sample files at temperature 0.2, each unittest class on its own in the"
            " sandbox with the `classeval` package set. The baseline is the authors' published"
            " figure for the same file. Every verdict is decided in the test side's own"
            " process (there is no other way: a test whose values cannot cross ends"
            " `cannot_isolate`, a failure), behind the fence `verdicts_by_fence` names;"
            " verdicts the 5 s limit decided move with the machine's load, so they are listed"
            " apart with the load at the start; `canonical.failures` in the JSON says why each"
            " failing test class fails."
        ),
        rows=(
            Row("load average at the start", "load_1m_at_start"),
            Row("reference solutions passing", "canonical.passed"),
            Row("... every test class decided isolated", "canonical.passed_isolated"),
            Row("test-class verdicts not isolated", "canonical.verdicts_not_isolated"),
            Row("test-class verdicts ended cannot_isolate", "canonical.verdicts_cannot_isolate"),
            Row("test-class verdicts decided by the 5 s limit", "canonical.verdicts_by_time_limit"),
            Row("reference solutions' failing test classes", "canonical.failing_test_classes"),
            Row(
                "Gemini-Pro greedy: classes solved",
                "greedy.Gemini-Pro_class_H_greedy.ours.classes_solved",
                "published",
                "greedy.Gemini-Pro_class_H_greedy.published_classes_solved",
            ),
            Row(
                "deepseek-coder-6.7b-instruct greedy: classes solved",
                "greedy.deepseek-coder-67b-instruct_class_H_greedy.ours.classes_solved",
                "published",
                "greedy.deepseek-coder-67b-instruct_class_H_greedy.published_classes_solved",
            ),
            Row(
                "GPT-3.5-Turbo greedy: classes solved",
                "greedy.GPT-35-Turbo_class_H_greedy.ours.classes_solved",
                "published",
                "greedy.GPT-35-Turbo_class_H_greedy.published_classes_solved",
            ),
            Row(
                "Magicoder-S-DS-6.7B greedy: classes solved",
                "greedy.Magicoder-S-DS-67B_class_H_greedy.ours.classes_solved",
                "published",
                "greedy.Magicoder-S-DS-67B_class_H_greedy.published_classes_solved",
            ),
            Row(
                "WizardCoder-15B-V1.0 greedy: classes solved",
                "greedy.WizardCoder-15B-V10_class_H_greedy.ours.classes_solved",
                "published",
                "greedy.WizardCoder-15B-V10_class_H_greedy.published_classes_solved",
            ),
            Row(
                "GPT-3.5-Turbo t0.2: class success pass@1",
                "sampled.GPT-35-Turbo_class_H_t02.ours.class_success.pass@1",
                "published",
                "sampled.GPT-35-Turbo_class_H_t02.published_pass@1.class_success",
            ),
            Row(
                "GPT-3.5-Turbo t0.2: class success pass@5",
                "sampled.GPT-35-Turbo_class_H_t02.ours.class_success.pass@5",
                "published",
                "sampled.GPT-35-Turbo_class_H_t02.published_pass@5.class_success",
            ),
            Row(
                "Gemini-Pro t0.2: class success pass@1",
                "sampled.Gemini-Pro_class_H_t02.ours.class_success.pass@1",
                "published",
                "sampled.Gemini-Pro_class_H_t02.published_pass@1.class_success",
            ),
            Row(
                "Gemini-Pro t0.2: class success pass@5",
                "sampled.Gemini-Pro_class_H_t02.ours.class_success.pass@5",
                "published",
                "sampled.Gemini-Pro_class_H_t02.published_pass@5.class_success",
            ),
        ),
    ),
    "retrieval_quality_device_fp16": Description(
        title="Retrieval quality: the default embedder and the fp16 device path",
        module="benchmarks.retrieval.retrieval_quality",
        what=(
            "Docstring sentences of indexed standard-library functions as queries, the"
            " function as the answer (MRR@10, higher is better). The baseline for hybrid"
            " search is the best single method in the same run. The fp16 device path ran on"
            " a CPU here, so only its quality and its agreement with the default's vectors"
            " are figures, not its speed."
        ),
        rows=(
            Row("functions indexed", "functions_indexed"),
            Row("queries", "queries"),
            Row(
                "default (`minilm`): hybrid MRR@10",
                "embedders.minilm.scores.hybrid.mrr_at_10",
                "vector only",
                "embedders.minilm.scores.vector.mrr_at_10",
            ),
            Row(
                "default (`minilm`): keyword MRR@10",
                "embedders.minilm.scores.keyword.mrr_at_10",
            ),
            Row(
                "default (`minilm`): hybrid recall@10",
                "embedders.minilm.scores.hybrid.recall_at_10",
            ),
            Row(
                "fp16 device path: hybrid MRR@10",
                "embedders.minilm-device-fp16>minilm.scores.hybrid.mrr_at_10",
                "default, same run",
                "embedders.minilm.scores.hybrid.mrr_at_10",
            ),
            Row(
                "fp16 device path: cosine to the default's vectors, mean",
                "embedders.minilm-device-fp16>minilm.cosine_to_minilm_mean",
            ),
            Row(
                "fp16 device path: cosine to the default's vectors, min",
                "embedders.minilm-device-fp16>minilm.cosine_to_minilm_min",
            ),
        ),
    ),
    **PICK_DESCRIPTIONS,  # after ClassEval scoring, as the page has always listed them
    "move_unchanged_verdicts": Description(
        title="Verdicts and the ClassEval pick before and after the move into rooms",
        module="benchmarks.pick.move_unchanged_verdicts",
        what=(
            "The commit before the move (e704e59, a git worktree) and this tree, each in a"
            " subprocess of its own with its own code on the path and a fresh CODEGEN_HOME (no"
            " tree reads the other's cached verdicts): MapCoder's recorded HumanEval and MBPP"
            " samples scored as `published_tables` and `mbpp_published` score them (per sample:"
            " passed and category; the failure messages counted apart), and the crew's pick"
            " among ClassEval's five greedy files on the held-out tasks by replay (per task: the"
            " final code and status). `--limit` takes the first tasks of each file; the command"
            " says which. The ClassEval run used the `default` package set where its command"
            " says so (the `classeval` image needs gensim, which this machine's wheels lack):"
            " both trees ran without the same packages. The crew's status of one ClassEval task"
            " (ClassEval_54, a board drawn with `random.choice`) is not stable: its own tests"
            " fail now and then and the crew asks for a repair the replay does not hold"
            " (`unrecorded`); in three runs of the 30 held-out tasks it was `unrecorded` once"
            " in each tree and `passed` otherwise, its final code the same every time."
            " MapCoder's picks are compared by `benchmarks.pick.move_unchanged`."
        ),
        rows=(
            Row("every set identical", "identical"),
            Row(
                "HumanEval fidelity: samples compared",
                "sets.humaneval_fidelity.compared",
                "with another verdict",
                "sets.humaneval_fidelity.differing",
            ),
            Row("HumanEval fidelity: passed (this tree)", "sets.humaneval_fidelity.passed.new"),
            Row(
                "MBPP fidelity: samples compared",
                "sets.mbpp_fidelity.compared",
                "with another verdict",
                "sets.mbpp_fidelity.differing",
            ),
            Row("MBPP fidelity: passed (this tree)", "sets.mbpp_fidelity.passed.new"),
            Row(
                "ClassEval five greedy: tasks compared",
                "sets.classeval_five_greedy.compared",
                "with another final code or status",
                "sets.classeval_five_greedy.differing",
            ),
            Row(
                "ClassEval five greedy: tasks with another final code (the pick)",
                "sets.classeval_five_greedy.picks_differing",
            ),
        ),
    ),
}
