"""Invented benchmark data for rating-study tests: discussion tasks, submissions of named systems
with distinctive ids, detected responses, judge verdicts with recognisable reasoning, and short
WAV clips in storage."""

from __future__ import annotations

import hashlib
import io
import json
import math
import struct
import wave
from dataclasses import dataclass, field

from django.core.files.base import ContentFile
from django.core.files.storage import default_storage

from annotation.models import Study
from annotation.services import StudyPlan, rater_invite, study_create, study_set_status
from evaluation.models import (
    Benchmark,
    Judge,
    Judgment,
    PromptVersion,
    Submission,
    System,
    Task,
    TaskJudgment,
    TaskResult,
)

SPEAKERS = ("Ines", "Tomas", "Marguerite")
# Distinctive values a blind page must never contain.
SUBMISSION_PK_BASE = 7_316_400
SYSTEM_NAME = "Quokkatron Ultra {n}"
JUDGE_NAME = "Zanzibar Verdict Engine"
REASONING = "VERDICT-REASONING-{n}"


def wav_bytes(seconds: float, frequency: float, rate: int = 8000) -> bytes:
    frames = int(seconds * rate)
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(rate)
        out.writeframes(
            b"".join(
                struct.pack("<h", int(12000 * math.sin(2 * math.pi * frequency * i / rate)))
                for i in range(frames)
            )
        )
    return buffer.getvalue()


def metatranscript(n: int) -> str:
    turns = [
        {"speaker": SPEAKERS[k % 3], "content": f"Turn {k} of conversation {n}.", "addressee": []}
        for k in range(4)
    ]
    return json.dumps(
        {
            "speakers": [
                {"name": s, "gender": "x", "voice_characteristics": "x"} for s in SPEAKERS
            ],
            "metatranscript": turns,
        }
    )


@dataclass
class Board:
    benchmark: Benchmark
    judge: Judge
    submissions: list[Submission]
    tasks: list[Task]
    audio_sha: dict[str, str] = field(default_factory=dict)  # storage key -> sha256

    def rows(self, submission: Submission) -> list[TaskResult]:
        return list(submission.task_results.select_related("task").order_by("task__task_id"))


def make_board(
    *,
    submissions: int = 2,
    tasks: int = 10,
    audio: bool = True,
    other_tasks: int = 2,
    empty_every: int = 0,
    verdict=lambda s, t: (s + t) % 3 != 0,
    conversation_seconds: float = 1.0,
    response_seconds: float = 0.6,
    slug: str = "rating-board",
    pk_base: int = SUBMISSION_PK_BASE,
) -> Board:
    """`tasks` discussion tasks (plus `other_tasks` turn-based ones that a discussion study must
    skip); each submission answers every task. With empty_every=k, every k-th discussion task
    gets an empty post-input response (judged False without a call)."""
    benchmark = Benchmark.objects.create(slug=slug, name="Rating board", plugin="mp-bench")
    prompt = PromptVersion.objects.create(
        benchmark=benchmark, kind="discussion", version=1, template="{metatranscript}", schema={}
    )
    judge = Judge.objects.create(
        benchmark=benchmark,
        slug="zanzibar",
        name=JUDGE_NAME,
        provider=Judge.Provider.OPENAI,
        models_by_kind={"discussion": "zanzibar-9"},
    )
    all_tasks = [
        Task.objects.create(
            benchmark=benchmark,
            task_id=f"scenario_discussion-{n:03d}",
            spec={
                "family": "discussion",
                "should_speak": True,
                "metatranscript": metatranscript(n),
            },
        )
        for n in range(tasks)
    ] + [
        Task.objects.create(
            benchmark=benchmark,
            task_id=f"scenario_turnbased-{n:03d}",
            spec={
                "family": "turnbased",
                "should_speak": False,
                "metatranscript": metatranscript(100 + n),
            },
        )
        for n in range(other_tasks)
    ]
    board = Board(benchmark, judge, [], all_tasks)
    for s in range(submissions):
        system = System.objects.create(name=SYSTEM_NAME.format(n=pk_base + s))
        submission = Submission.objects.create(
            pk=pk_base + s,
            benchmark=benchmark,
            system=system,
            judge=judge,
            status=Submission.Status.SCORED,
            is_published=True,
        )
        board.submissions.append(submission)
        for t, task in enumerate(all_tasks):
            family = task.spec["family"]
            empty = bool(empty_every) and t % empty_every == 0 and family == "discussion"
            files = {}
            if audio:
                for name, seconds, base in (
                    ("all_stitched.wav", conversation_seconds, 220),
                    ("response.wav", response_seconds, 440),
                ):
                    data = wav_bytes(seconds, base + 7 * t + 3 * s)
                    key = default_storage.save(
                        f"submissions/{submission.pk}/{task.task_id}/{name}", ContentFile(data)
                    )
                    board.audio_sha[key] = hashlib.sha256(data).hexdigest()
                    files[name] = {"key": key, "size": len(data)}
            row = TaskResult.objects.create(
                submission=submission,
                task=task,
                files=files,
                detected=True,
                detection={
                    "spoke": not empty,
                    "post_text": "" if empty else f"Reply {t} from system {s} after the input.",
                    "full_text": f"Early words. Reply {t} from system {s} after the input.",
                },
            )
            if family != "discussion":
                continue
            judgment = None
            if not empty:
                judgment = Judgment.objects.create(
                    judge_identity="zanzibar|discussion",
                    prompt_sha256=hashlib.sha256(f"{s}/{t}".encode()).hexdigest(),
                    prompt="prompt",
                    kind="discussion",
                    provider="openai",
                    model="zanzibar-9",
                    prompt_version=prompt,
                    status=Judgment.Status.DONE,
                    verdict=verdict(s, t),
                    reasoning=REASONING.format(n=f"{s}-{t}"),
                    raw_output=json.dumps({"consistent": verdict(s, t)}),
                )
            TaskJudgment.objects.create(
                task_result=row,
                judge=judge,
                kind="discussion",
                judgment=judgment,
                fixed=None if judgment else {"verdict": False},
            )
    return board


def make_study(
    board: Board,
    *,
    slug: str = "study",
    per_stratum: int = 5,
    open_now: bool = True,
    strata=None,
    kind: str = "discussion",
    **options,
) -> Study:
    plan = StudyPlan(
        name=f"Study {slug}",
        slug=slug,
        benchmark=board.benchmark,
        judge=board.judge,
        kind=kind,
        strata=tuple(strata if strata is not None else board.submissions),
        guideline_text="Judge whether the response fits the conversation.",
        per_stratum=per_stratum,
        **options,
    )
    study = study_create(plan=plan)
    if open_now:
        study_set_status(study=study, status=Study.Status.OPEN)
    return study


def invite(study: Study, n: int = 1):
    raters = [rater_invite(study=study) for _ in range(n)]
    return raters[0] if n == 1 else raters
