from django.core.files.storage import default_storage
from django.shortcuts import get_object_or_404, render

from evaluation.models import Score
from evaluation.selectors import submission_progress, submissions_visible_to


def submission_page(request, pk: int):
    submission = get_object_or_404(
        submissions_visible_to(user=request.user)
        .select_related("benchmark", "system", "judge")
        .filter(is_reported=False),
        pk=pk,
    )
    tasks = list(submission.task_results.select_related("task").order_by("task__task_id"))
    for row in tasks:
        row.audio = [
            (name, default_storage.url(info["key"]))
            for name, info in sorted(row.files.items())
            if name.endswith(".wav")
        ]
    return render(
        request,
        "leaderboard/submission.html",
        {
            "submission": submission,
            "progress": submission_progress(submission=submission),
            "score": Score.objects.filter(
                submission=submission, judge_id=submission.judge_id
            ).first(),
            "tasks": tasks,
        },
    )
