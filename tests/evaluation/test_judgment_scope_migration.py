"""Judgments made when identical requests were shared across teams migrate to one judgment per
team (evaluation 0017): each team's submissions keep their answers, a re-score of every one of
them asks the judge nothing, and no team's links reach a judgment another team uses; the
migration runs backward to one shared judgment again. Run on the toy benchmark against a local
judge server, the old sharing made by the scope every submission had then (none)."""

from __future__ import annotations

import pytest
from django.core.management import call_command
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from evaluation.models import Judgment, Score, TaskJudgment
from evaluation.services import judging, submission_rescore
from tests.evaluation.test_spending import people, submit, toy_judge  # noqa: F401

pytestmark = pytest.mark.django_db(transaction=True)

BEFORE = [("evaluation", "0016_submission_stored_bytes")]


def migrate(targets) -> None:
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)


def latest() -> list[tuple[str, str]]:
    """Every app's newest migration (0017 and whatever came after it)."""
    executor = MigrationExecutor(connection)
    return executor.loader.graph.leaf_nodes()


def linked(submission) -> dict[str, int]:
    """{request hash: judgment id} of a submission's links."""
    return dict(
        TaskJudgment.objects.filter(task_result__submission=submission, judgment__isnull=False)
        .values_list("judgment__prompt_sha256", "judgment_id")
        .distinct()
    )


def numbers(submission) -> dict:
    return {s.judge_id: s.results for s in Score.objects.filter(submission=submission)}


def test_shared_judgments_split_per_team_rescore_for_free_and_go_back(
    eager,
    toy_judge,  # noqa: F811 (the fixture imported above)
    people,  # noqa: F811
    tmp_path,
    judge_server,
    monkeypatch,  # noqa: F811
):
    team, others = people[0], people[1]
    answers = {"q1": "It is 2", "q2": "It is 4"}
    with monkeypatch.context() as before:
        before.setattr(judging, "judgment_scope", lambda submission: "")
        theirs = submit(toy_judge, tmp_path, answers, team=team, name="Theirs")
        ours = submit(toy_judge, tmp_path, {**answers, "q3": "It is 6"}, team=others, name="Ours")
        loose = submit(toy_judge, tmp_path, answers, team=None, name="Loose")
    shared = linked(theirs)
    assert len(shared) == 4 and len(judge_server.requests) == 6
    assert all(linked(ours)[sha] == pk for sha, pk in shared.items())
    assert linked(loose) == shared
    scores = {run.pk: numbers(run) for run in (theirs, ours, loose)}
    answers_by_sha = dict(Judgment.objects.values_list("prompt_sha256", "raw_output"))

    migrate(BEFORE)
    migrate(latest())
    try:
        mine, yours, nobody = linked(theirs), linked(ours), linked(loose)
        assert set(mine) == set(shared) and set(yours) == set(shared) | {
            sha for sha in linked(ours) if sha not in shared
        }
        assert not set(mine.values()) & set(yours.values())
        assert not set(nobody.values()) & (set(mine.values()) | set(yours.values()))
        assert nobody == shared  # without a team: the judgments it had
        for run, found in ((theirs, mine), (ours, yours)):
            for sha, pk in found.items():
                judgment = Judgment.objects.get(pk=pk)
                assert judgment.judge_identity.endswith(f"|team:{run.team_id}")
                assert judgment.raw_output == answers_by_sha[sha]
        asked = len(judge_server.requests)
        for run in (theirs, ours, loose):
            submission_rescore(submission=run)
            assert numbers(run) == scores[run.pk]
        assert len(judge_server.requests) == asked
        assert (linked(theirs), linked(ours), linked(loose)) == (mine, yours, nobody)

        migrate(BEFORE)
        assert linked(theirs) == shared and linked(loose) == shared
        assert all(linked(ours)[sha] == pk for sha, pk in shared.items())
        assert Judgment.objects.count() == 6
    finally:
        call_command("migrate", verbosity=0)
