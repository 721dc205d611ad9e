from django.urls import path

from leaderboard import views, views_about

urlpatterns = [
    path("", views.benchmark_list, name="benchmark-list"),
    path("benchmarks/<slug:slug>/", views.leaderboard_page, name="leaderboard"),
    path("benchmarks/<slug:slug>/about/", views_about.benchmark_about, name="benchmark-about"),
    path(
        "benchmarks/<slug:slug>/example-upload/",
        views_about.benchmark_example_upload,
        name="benchmark-example",
    ),
    path("benchmarks/<slug:slug>/leaderboard.csv", views.leaderboard_csv, name="leaderboard-csv"),
    path("benchmarks/<slug:slug>/charts.json", views.leaderboard_charts, name="leaderboard-charts"),
    path("benchmarks/<slug:slug>/judges/", views.judge_agreement_page, name="judge-agreement"),
    path("benchmarks/<slug:slug>/judges/manage/", views.judges_manage, name="judges-manage"),
    path(
        "benchmarks/<slug:slug>/judges/<slug:judge_slug>/rescore/",
        views.judge_rescore,
        name="judge-rescore",
    ),
    path("systems/<int:pk>/", views.system_page, name="system"),
    path("api/benchmarks/<slug:slug>/leaderboard/", views.leaderboard_api, name="leaderboard-api"),
]
