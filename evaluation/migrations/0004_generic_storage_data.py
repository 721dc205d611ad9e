"""Move the benchmark fields the engine's rows carried as columns into their JSON homes.

Until now the task, detection and submission columns held the fields of the one benchmark the
site hosted. Forward: the same values go to Task.spec, TaskResult.detection, Submission.facts and
row_group; a decision taken without a judge call becomes the link's ``fixed`` outcome. Backward
restores the columns from the JSON. Numbers are unchanged either way: the same values are read.
"""

from django.db import migrations
from django.db.models import F

BATCH = 500
TASK_FIELDS = (
    "family",
    "should_speak",
    "metatranscript",
    "question_text",
    "answer_text",
    "is_speaker_name",
)
DETECTION_FIELDS = (
    "spoke",
    "spoke_via",
    "post_text",
    "full_text",
    "latency",
    "input_end",
    "turn_taking_correct",
)
# What the columns held when the JSON has nothing (the columns' own defaults).
DETECTION_DEFAULTS = {"spoke": False, "spoke_via": "", "post_text": "", "full_text": ""}
EMPTY_RESPONSE = {"verdict": False}


def _batches(queryset):
    last = 0
    while True:
        rows = list(queryset.filter(pk__gt=last).order_by("pk")[:BATCH])
        if not rows:
            return
        yield rows
        last = rows[-1].pk


def forward(apps, schema_editor):
    Task = apps.get_model("evaluation", "Task")
    TaskResult = apps.get_model("evaluation", "TaskResult")
    Submission = apps.get_model("evaluation", "Submission")
    TaskJudgment = apps.get_model("evaluation", "TaskJudgment")

    for rows in _batches(Task.objects.all()):
        for task in rows:
            task.spec = {name: getattr(task, name) for name in TASK_FIELDS}
        Task.objects.bulk_update(rows, ["spec"])

    for rows in _batches(TaskResult.objects.filter(detected=True)):
        for row in rows:
            row.detection = {name: getattr(row, name) for name in DETECTION_FIELDS}
        TaskResult.objects.bulk_update(rows, ["detection"])

    for rows in _batches(Submission.objects.select_related("system")):
        for submission in rows:
            submission.row_group = submission.system.system_type
            if submission.half_duplex is not None:
                submission.facts = {"half_duplex": submission.half_duplex}
                # The one processing step (detection) has run.
                submission.steps_done = 1
        Submission.objects.bulk_update(rows, ["row_group", "facts", "steps_done"])

    TaskJudgment.objects.filter(judgment__isnull=True).update(
        fixed=EMPTY_RESPONSE, label="empty response"
    )
    # A judgment reused from the cache is shown at the time this submission used it.
    for rows in _batches(
        TaskJudgment.objects.select_related("judgment", "task_result__submission")
    ):
        for link in rows:
            created = link.task_result.submission.created_at
            done = link.judgment.completed_at if link.judgment else None
            link.linked_at = max(created, done) if done else created
        TaskJudgment.objects.bulk_update(rows, ["linked_at"])


def backward(apps, schema_editor):
    Task = apps.get_model("evaluation", "Task")
    TaskResult = apps.get_model("evaluation", "TaskResult")
    Submission = apps.get_model("evaluation", "Submission")
    System = apps.get_model("evaluation", "System")

    for rows in _batches(Task.objects.all()):
        for task in rows:
            for name in TASK_FIELDS:
                default = False if name in ("should_speak", "is_speaker_name") else ""
                setattr(task, name, task.spec.get(name, default))
        Task.objects.bulk_update(rows, list(TASK_FIELDS))

    for rows in _batches(TaskResult.objects.all()):
        for row in rows:
            for name in DETECTION_FIELDS:
                setattr(row, name, row.detection.get(name, DETECTION_DEFAULTS.get(name)))
        TaskResult.objects.bulk_update(rows, list(DETECTION_FIELDS))

    for rows in _batches(Submission.objects.all()):
        for submission in rows:
            submission.half_duplex = submission.facts.get("half_duplex")
        Submission.objects.bulk_update(rows, ["half_duplex"])
    # A system's type is the row group of its newest submission.
    for system in System.objects.all():
        newest = (
            Submission.objects.filter(system=system)
            .exclude(row_group="")
            .order_by(F("created_at").desc())
            .values_list("row_group", flat=True)
            .first()
        )
        if newest:
            System.objects.filter(pk=system.pk).update(system_type=newest)


class Migration(migrations.Migration):
    dependencies = [("evaluation", "0003_generic_storage_fields")]

    operations = [migrations.RunPython(forward, backward)]
