"""What the code location launches: each kind of work's jobs, the sensors and the schedule that
start them, and the executor a request's steps run on.

``jobs`` (one request through the crew, submitting a request) and ``sensors`` (the inbox);
``review`` (the verdict job and the sensor that ends forgotten reviews); ``corpus`` and
``indexing`` (builds, the nightly re-index, the vector index kept current); ``evaluation``
(each benchmark's jobs, and the session the CLI drives); ``executor`` (steps on threads).
``definitions`` wires them into the code location; the CLI calls the synchronous helpers.
"""

from codegen.orchestration.launch.corpus import (
    CORPUS_JOBS,
    CORPUS_SCHEDULES,
    CORPUS_SENSORS,
    StageResult,
    build_corpus,
    build_index,
    corpus_reindex_schedule,
    first_build_sensor,
)
from codegen.orchestration.launch.evaluation import (
    eval_config,
    eval_jobs,
    open_session,
    sandbox_resource,
    score_samples_file,
)
from codegen.orchestration.launch.executor import threaded_in_process_executor
from codegen.orchestration.launch.indexing import INDEX_JOBS, INDEX_SENSORS
from codegen.orchestration.launch.jobs import (
    CODEGEN_JOB,
    codegen_request_job,
    run_in_this_process,
    submit_request_job,
)
from codegen.orchestration.launch.review import (
    REVIEW_JOB,
    build_review_sensor,
    review_request_job,
    verdict_run_config,
)
from codegen.orchestration.launch.sensors import build_inbox_sensor

__all__ = [
    "CODEGEN_JOB",
    "CORPUS_JOBS",
    "CORPUS_SCHEDULES",
    "CORPUS_SENSORS",
    "INDEX_JOBS",
    "INDEX_SENSORS",
    "REVIEW_JOB",
    "StageResult",
    "build_corpus",
    "build_inbox_sensor",
    "build_index",
    "build_review_sensor",
    "codegen_request_job",
    "corpus_reindex_schedule",
    "eval_config",
    "eval_jobs",
    "first_build_sensor",
    "open_session",
    "review_request_job",
    "run_in_this_process",
    "sandbox_resource",
    "score_samples_file",
    "submit_request_job",
    "threaded_in_process_executor",
    "verdict_run_config",
]
