from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView

from leaderboard.api import (  # noqa: F401 (schema registers)
    docs,
    schema,
    views,
    views_compare,
    views_submissions,
)

urlpatterns = [
    # Submission create (POST) is defined beside the submission upload flow.
    path("", include("leaderboard.api.urls_submit")),
    path("", views.api_root, name="api-root"),
    path("schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("docs/", docs.api_docs, name="api-docs"),
    path("benchmarks/", views.BenchmarkList.as_view(), name="api-benchmark-list"),
    path("benchmarks/<slug:slug>/", views.BenchmarkDetail.as_view(), name="api-benchmark-detail"),
    path("benchmarks/<slug:slug>/judges/", views.JudgeList.as_view(), name="api-judge-list"),
    path(
        "benchmarks/<slug:slug>/slices/",
        views_compare.BenchmarkSlices.as_view(),
        name="api-benchmark-slices",
    ),
    path(
        "benchmarks/<slug:slug>/compare/",
        views_compare.BenchmarkCompare.as_view(),
        name="api-benchmark-compare",
    ),
    path("systems/", views.SystemList.as_view(), name="api-system-list"),
    path("systems/<int:pk>/", views.SystemDetail.as_view(), name="api-system-detail"),
    path("submissions/", views_submissions.SubmissionList.as_view(), name="api-submission-list"),
    path(
        "submissions/<int:pk>/",
        views_submissions.SubmissionDetail.as_view(),
        name="api-submission-detail",
    ),
    path(
        "submissions/<int:pk>/tasks/",
        views_submissions.SubmissionTaskList.as_view(),
        name="api-submission-tasks",
    ),
    path(
        "submissions/<int:pk>/tasks/<str:task_id>/judgments/",
        views_submissions.TaskJudgmentList.as_view(),
        name="api-task-judgments",
    ),
    path(
        "submissions/<int:pk>/retry-failed/",
        views_submissions.SubmissionRetryFailed.as_view(),
        name="api-submission-retry-failed",
    ),
    path(
        "submissions/<int:pk>/publish/",
        views_submissions.SubmissionPublish.as_view(),
        name="api-submission-publish",
    ),
]
