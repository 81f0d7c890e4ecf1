"""What evaluation runs leave on disk: the store (``files``), its records, the runs listed by
``codegen eval list`` (``runs``) and the published baselines.

The room's face: the rest of codegen imports these names from here."""

from codegen.evaluation.store.baselines import (
    ensure_real_exec,
)
from codegen.evaluation.store.files import (
    EvalStore,
    digest,
    read_json,
    read_object,
    save_figure,
    write_json_atomic,
)
from codegen.evaluation.store.records import (
    Candidate,
    CandidateDict,
    ConfigDoc,
    HistoryEntry,
    SamplesDoc,
    ScoresDoc,
)
from codegen.evaluation.store.runs import (
    COLUMNS,
    RunRow,
    plot_runs,
    run_rows,
    runs_markdown,
    runs_text,
)

__all__ = [
    "COLUMNS",
    "Candidate",
    "CandidateDict",
    "ConfigDoc",
    "EvalStore",
    "HistoryEntry",
    "RunRow",
    "SamplesDoc",
    "ScoresDoc",
    "digest",
    "ensure_real_exec",
    "plot_runs",
    "read_json",
    "read_object",
    "run_rows",
    "runs_markdown",
    "runs_text",
    "save_figure",
    "write_json_atomic",
]
