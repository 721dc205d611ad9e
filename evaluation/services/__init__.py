"""Writes of the evaluation context, by stage: importing a benchmark (benchmarks.py), a
submission's life from its upload to its deletion (submissions.py), the pipeline (pipeline.py),
how its stages run on workers (work.py), the judge calls (judging.py) and held-out tasks
(held_out.py)."""

from evaluation.services.benchmarks import ImportSummary, benchmark_import, reported_rows_load
from evaluation.services.files import file_sha256, stored_sha256, stream_sha256, task_input
from evaluation.services.judging import (
    judge_client,
    judge_endpoint,
    judge_identity,
    judgments_prepare,
    request_sha256,
)
from evaluation.services.pipeline import (
    failed_judgments_retry,
    judging_finish,
    submission_aggregate,
    submission_ingest,
    submission_judge,
    submission_rescore,
    submission_resume,
    submissions_sweep,
    task_outcomes,
)
from evaluation.services.submissions import (
    StoredBundle,
    SubmissionInvalid,
    bundle_discard,
    bundle_store,
    bundle_stored_name,
    bundle_suffix,
    bundle_validate,
    failed_files_purge,
    pending_deletions_run,
    submission_create,
    system_for_submission,
    upload_limits,
)
from evaluation.services.work import enqueue_on_commit, submission_fail

__all__ = [
    "ImportSummary",
    "StoredBundle",
    "SubmissionInvalid",
    "benchmark_import",
    "bundle_discard",
    "bundle_store",
    "bundle_stored_name",
    "bundle_suffix",
    "bundle_validate",
    "enqueue_on_commit",
    "failed_files_purge",
    "failed_judgments_retry",
    "file_sha256",
    "pending_deletions_run",
    "judge_client",
    "judge_endpoint",
    "judge_identity",
    "judging_finish",
    "judgments_prepare",
    "reported_rows_load",
    "request_sha256",
    "stored_sha256",
    "stream_sha256",
    "submission_aggregate",
    "submission_create",
    "submission_fail",
    "submission_ingest",
    "submission_judge",
    "submission_rescore",
    "submission_resume",
    "submissions_sweep",
    "system_for_submission",
    "task_input",
    "task_outcomes",
    "upload_limits",
]
