"""The Audio MultiChallenge plug-in's pure core (452 conversations, 1,712 rubric items, 4 axes).

Rules and sources: SPEC.md of the benchmark (kept beside the checkout, not in it). Modules:
dataset (import), responses (upload), judge (requests, parsing, attempts), judgments (stored
judge outputs), metrics (APR, ARS, intervals), paper (reported rows); in demo/: offline (a
heuristic stand-in judge, not an LLM), synthetic (test and demo data), bench (plain-Python
reference pass).

plugin.py declares the benchmark to the engine, through importer.py (export -> tasks, prompt,
audio), upload.py (files -> replies), judging.py (judge requests and answers), outcomes.py
(stored outcomes -> results and per-task contributions), drilldown.py (the task page and rating
units) and demo/ (the demo's invented export and systems).
"""

from .dataset import (
    AXES,
    AudioBlob,
    Dataset,
    DatasetError,
    Problem,
    Task,
    iter_user_audio,
    parse_record,
    read_dataset,
)
from .demo.offline import offline_raw_output, offline_verdict
from .judge import (
    DEFAULT_MODEL,
    JUDGE_KIND,
    Attempt,
    ItemOutcome,
    JudgePrompt,
    JudgmentRequest,
    ParsedJudgment,
    PromptError,
    build_grading_conversation_history,
    decide_item,
    fill_template,
    judge_message,
    judgment_requests,
    next_attempt_number,
    parse_judgment,
    read_judge_prompt,
    request_body,
)
from .judgments import JudgmentsError, StoredJudgments, read_judgments, read_judgments_file
from .metrics import TaskResult, aggregate, task_results
from .paper import REPORTED_NOTE, reported_rows
from .paper import SOURCE as REPORTED_SOURCE
from .plugin import plugin
from .responses import OUTPUT_MODALITIES, Submission, SubmissionError, parse_submission

__all__ = [
    "AXES",
    "DEFAULT_MODEL",
    "JUDGE_KIND",
    "OUTPUT_MODALITIES",
    "REPORTED_NOTE",
    "REPORTED_SOURCE",
    "Attempt",
    "AudioBlob",
    "Dataset",
    "DatasetError",
    "ItemOutcome",
    "JudgePrompt",
    "JudgmentRequest",
    "JudgmentsError",
    "ParsedJudgment",
    "Problem",
    "PromptError",
    "StoredJudgments",
    "Submission",
    "SubmissionError",
    "Task",
    "TaskResult",
    "aggregate",
    "build_grading_conversation_history",
    "decide_item",
    "fill_template",
    "iter_user_audio",
    "judge_message",
    "judgment_requests",
    "next_attempt_number",
    "offline_raw_output",
    "offline_verdict",
    "parse_judgment",
    "parse_record",
    "parse_submission",
    "plugin",
    "read_dataset",
    "read_judge_prompt",
    "read_judgments",
    "read_judgments_file",
    "reported_rows",
    "request_body",
    "task_results",
]
