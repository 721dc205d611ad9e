"""Score records: each set of numbers a submission's score has had, kept when a re-score
replaces them, with what produced them (judge configuration, prompt versions, processing)."""

from __future__ import annotations

from evaluation.benchmarks import get_plugin
from evaluation.models import Score, ScoreRecord
from evaluation.selectors import prompt_versions_used


def _prompt_versions(score: Score, used: list[tuple] | None) -> list[dict]:
    if used is None:
        used = prompt_versions_used(submission_id=score.submission_id, judge_id=score.judge_id)
    return [{"kind": kind, "version": version, "sha256": sha} for kind, version, sha in used]


def score_record_add(*, score: Score, used: list[tuple] | None = None) -> ScoreRecord | None:
    """Record the score as it now stands, unless the newest record of the same submission and
    judge already says the same (a re-score that changed nothing adds no record). ``used``:
    the prompt versions its judgments used (prompt_versions_used), when already read."""
    submission = score.submission
    judge = score.judge
    plugin = get_plugin(submission.benchmark.plugin)
    record = ScoreRecord(
        submission=submission,
        judge=judge,
        results=score.results,
        judgments_total=score.judgments_total,
        judgments_failed=score.judgments_failed,
        judge_config={
            "slug": judge.slug,
            "name": judge.name,
            "provider": judge.provider,
            "models": judge.models_by_kind,
            "sampling": judge.sampling_params(),
        },
        prompt_versions=_prompt_versions(score, used),
        processing={
            "rules": plugin.rules_version,
            "steps": {step.name: step.version for step in plugin.steps},
        },
    )
    latest = (
        ScoreRecord.objects.filter(submission=submission, judge=judge)
        .order_by("-computed_at", "-pk")
        .first()
    )
    fields = ("results", "judgments_failed", "judge_config", "prompt_versions", "processing")
    if latest is not None and all(getattr(latest, f) == getattr(record, f) for f in fields):
        return None
    record.save()
    return record
