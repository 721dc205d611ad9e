"""Judgments are shared within one team (judging.judgment_scope): a judgment used by a team's
submissions takes the team's scope in its cache key, so that re-scoring them still finds it. A
judgment several teams used is copied, answer and all, once per further team, and that team's
links move to its copy (no judge is asked again). Judgments used only by submissions without a
team keep their key.

Back: each scoped judgment loses its scope; where an unscoped twin exists already (the same
request, used by another team or by none), its links move to the twin and it is deleted."""

from django.db import migrations

BATCH = 500


def _scoped(identity: str, team_id: int) -> str:
    return f"{identity}|team:{team_id}"


def forward(apps, schema_editor):
    Judgment = apps.get_model("evaluation", "Judgment")
    TaskJudgment = apps.get_model("evaluation", "TaskJudgment")
    # judgment -> {team ids of the submissions using it (None: without a team)}
    users: dict[int, set] = {}
    for judgment_id, team_id in (
        TaskJudgment.objects.filter(judgment__isnull=False)
        .values_list("judgment_id", "task_result__submission__team_id")
        .distinct()
        .iterator(chunk_size=5000)
    ):
        users.setdefault(judgment_id, set()).add(team_id)
    ids = sorted(pk for pk, teams in users.items() if teams - {None})
    for start in range(0, len(ids), BATCH):
        for judgment in Judgment.objects.filter(pk__in=ids[start : start + BATCH]):
            teams = users[judgment.pk]
            named = sorted(t for t in teams if t is not None)
            identity = judgment.judge_identity
            # Without-team users keep the original; otherwise it becomes the first team's.
            keep_for = None if None in teams else named.pop(0)
            for team_id in named:
                copy = Judgment.objects.get(pk=judgment.pk)
                copy.pk = None
                copy.judge_identity = _scoped(identity, team_id)
                copy.save(force_insert=True)
                TaskJudgment.objects.filter(
                    judgment_id=judgment.pk, task_result__submission__team_id=team_id
                ).update(judgment_id=copy.pk)
            if keep_for is not None:
                Judgment.objects.filter(pk=judgment.pk).update(
                    judge_identity=_scoped(identity, keep_for)
                )


def backward(apps, schema_editor):
    Judgment = apps.get_model("evaluation", "Judgment")
    TaskJudgment = apps.get_model("evaluation", "TaskJudgment")
    scoped = Judgment.objects.filter(judge_identity__regex=r"\|team:[0-9]+$").order_by("pk")
    for judgment in scoped.iterator(chunk_size=BATCH):
        identity = judgment.judge_identity.rsplit("|team:", 1)[0]
        twin = (
            Judgment.objects.filter(judge_identity=identity, prompt_sha256=judgment.prompt_sha256)
            .values_list("pk", flat=True)
            .first()
        )
        if twin is None:
            Judgment.objects.filter(pk=judgment.pk).update(judge_identity=identity)
        else:
            TaskJudgment.objects.filter(judgment_id=judgment.pk).update(judgment_id=twin)
            Judgment.objects.filter(pk=judgment.pk).delete()


class Migration(migrations.Migration):
    dependencies = [("evaluation", "0016_submission_stored_bytes")]

    operations = [migrations.RunPython(forward, backward, elidable=False)]
