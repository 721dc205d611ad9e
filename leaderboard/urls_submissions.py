from django.urls import path

from leaderboard import audio, views_records, views_submissions

urlpatterns = [
    path("submissions/<int:pk>/", views_submissions.submission_page, name="submission"),
    path(
        "submissions/<int:pk>/progress/",
        views_submissions.submission_progress_fragment,
        name="submission-progress",
    ),
    path(
        "submissions/<int:pk>/retry/", views_submissions.submission_retry, name="submission-retry"
    ),
    path(
        "submissions/<int:pk>/release-spending/",
        views_submissions.submission_release_spending,
        name="submission-release-spending",
    ),
    path(
        "submissions/<int:pk>/manage/<slug:action>/",
        views_submissions.submission_manage,
        name="submission-manage",
    ),
    path(
        "submissions/<int:pk>/scores/<int:record_id>/",
        views_records.score_record_page,
        name="score-record",
    ),
    path(
        "submissions/<int:pk>/outcomes.<str:fmt>",
        views_records.submission_outcomes,
        name="submission-outcomes",
    ),
    path(
        "submissions/<int:pk>/tasks/<str:task_id>/",
        views_submissions.task_page,
        name="submission-task",
    ),
    # Stored audio, only through short-lived signed tokens (leaderboard/audio.py).
    path("audio/<str:token>/", audio.audio_file, name="audio"),
    path("audio/<str:token>/peaks/", audio.audio_peaks, name="audio-peaks"),
    path("audio/<str:token>/renew/", audio.audio_renew, name="audio-renew"),
]
