"""Which scorer produced a number, the changelog of scorers, and the "older scorer" marking
after a judge, prompt or rules change, through the real pipeline (offline judge), on the example
plug-in (tests/toyplugin): one judged kind, "grade", asked twice per answered task."""

import pytest

from evaluation.models import PromptVersion, Score, ScorerVersion, Submission
from evaluation.scorer import changes, current_scorer, older_parts, scorer_log_current
from evaluation.services import submission_create, submission_rescore
from tests.toyplugin.toy import ToyBench

pytestmark = pytest.mark.django_db(transaction=True)


NOTE = "Each answer graded twice; a task scores the mean of its grades."


@pytest.fixture
def noted(monkeypatch):
    """The toy's rules with a note, as a benchmark's first rules usually have."""
    monkeypatch.setattr(ToyBench, "rules_notes", {ToyBench.rules_version: NOTE})


@pytest.fixture
def scored(eager, noted, toybench, toy_partial):
    offline = toybench.judges.get(slug="offline")
    submission = submission_create(
        benchmark=toybench,
        bundle_path=toy_partial,
        system_name="Agent",
        judge=offline,
        allow_partial=True,
    )
    submission.refresh_from_db()
    assert submission.status == Submission.Status.SCORED, submission.error
    return toybench, offline, submission


def test_a_score_names_its_scorer_and_the_changelog_starts(scored):
    benchmark, offline, submission = scored
    score = Score.objects.get(submission=submission, judge=offline)
    assert score.scorer["rules"] == "1"
    assert score.scorer["judge"]["slug"] == "offline"
    # Three answered tasks, each graded with the toy's one prompt, at version 1.
    assert {kind: [v for v, _ in found] for kind, found in score.scorer["prompts"].items()} == {
        "grade": [1],
    }
    assert older_parts(score.scorer, current_scorer(benchmark=benchmark, judge=offline)) == []
    entries = ScorerVersion.objects.filter(benchmark=benchmark, judge=offline)
    assert entries.count() == 1
    assert entries.get().changes == ["first scorer"]
    assert entries.get().note == NOTE


def test_a_new_prompt_version_marks_the_rows_that_used_it_until_rescored(scored):
    benchmark, offline, submission = scored
    old = PromptVersion.objects.get(benchmark=benchmark, kind="grade", version=1)
    PromptVersion.objects.create(
        benchmark=benchmark,
        kind="grade",
        version=2,
        template=old.template + "\nBe strict.",
        schema=old.schema,
        sha256="f" * 64,
    )
    newest = ScorerVersion.objects.filter(benchmark=benchmark, judge=offline).first()
    assert newest.changes == ["grade prompt v1 → v2"]
    score = Score.objects.get(submission=submission, judge=offline)
    current = current_scorer(benchmark=benchmark, judge=offline)
    assert older_parts(score.scorer, current) == ["prompts"]
    # A row whose judgments never used the grade prompt (none answered) is not older.
    without = {**score.scorer, "prompts": {}}
    assert older_parts(without, current) == []

    submission_rescore(submission=submission, judge=offline)
    score.refresh_from_db()
    assert [v for v, _ in score.scorer["prompts"]["grade"]] == [2]
    assert older_parts(score.scorer, current) == []


def test_a_judge_change_and_a_rules_change_are_logged_with_what_changed(scored, monkeypatch):
    benchmark, offline, submission = scored
    gpt = benchmark.judges.get(is_official=True)
    before = current_scorer(benchmark=benchmark, judge=gpt)
    gpt.models_by_kind = {**gpt.models_by_kind, "grade": "judge-model-2"}
    gpt.temperature = 0.3
    gpt.save()
    entry = ScorerVersion.objects.filter(benchmark=benchmark, judge=gpt).first()
    old_model = before["judge"]["models"]["grade"]
    assert entry.changes == [
        f"judge model for grade: {old_model} → judge-model-2",
        "judge temperature: 0.0 → 0.3",
    ]
    assert older_parts(before, current_scorer(benchmark=benchmark, judge=gpt)) == ["judge"]

    monkeypatch.setattr(ToyBench, "rules_version", "2")
    monkeypatch.setattr(ToyBench, "rules_notes", {"2": "Style counts half."})
    scorer_log_current(benchmark=benchmark)
    entry = ScorerVersion.objects.filter(benchmark=benchmark, judge=offline).first()
    assert entry.changes == ["scoring rules 1 → 2"]
    assert entry.note == "Style counts half."
    score = Score.objects.get(submission=submission, judge=offline)
    assert older_parts(score.scorer, current_scorer(benchmark=benchmark, judge=offline)) == [
        "rules"
    ]


def test_rows_from_before_scorers_were_kept_are_older_in_every_part():
    assert older_parts(None, {"rules": "1"}) == ["rules", "processing", "judge", "prompts"]
    assert changes(None, {"rules": "1"}) == ["first scorer"]


def test_the_changelog_page_marks_older_rows_and_staff_rescore_them(scored, client):
    from django.contrib.auth.models import User
    from django.urls import reverse

    benchmark, offline, submission = scored
    submission.is_published = True
    submission.save()
    old = PromptVersion.objects.get(benchmark=benchmark, kind="grade", version=1)
    PromptVersion.objects.create(
        benchmark=benchmark,
        kind="grade",
        version=2,
        template=old.template + " ",
        sha256="e" * 64,
    )
    url = reverse("scorer-changelog", args=[benchmark.slug])
    page = client.get(url).content.decode()
    assert "grade prompt v1 → v2" in page
    assert "1 row scored with an older scorer." in page
    assert "Re-score the whole board" not in page  # staff only
    entry = ScorerVersion.objects.filter(judge=offline).first()
    assert client.post(url, {"version": entry.pk, "note": "x"}).status_code == 403

    client.force_login(User.objects.create_user("sam", is_staff=True))
    client.post(url, {"version": entry.pk, "note": "Stricter wording for grades."})
    entry.refresh_from_db()
    assert entry.note == "Stricter wording for grades."
    page = client.get(url).content.decode()
    assert "Re-score the whole board with offline" in page
    client.post(reverse("judge-rescore", args=[benchmark.slug, "offline"]))
    page = client.get(url).content.decode()
    assert "Every row scored with offline is current." in page
