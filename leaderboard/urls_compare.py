from django.urls import path

from leaderboard import views_compare, views_scorers

urlpatterns = [
    path("benchmarks/<slug:slug>/compare/", views_compare.compare_page, name="compare"),
    path(
        "benchmarks/<slug:slug>/compare/tasks/<str:task_id>/",
        views_compare.compare_task_page,
        name="compare-task",
    ),
    path(
        "benchmarks/<slug:slug>/scorers/", views_scorers.scorer_changelog, name="scorer-changelog"
    ),
]
