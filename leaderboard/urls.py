from django.urls import include, path

from leaderboard import views

# Each area keeps its own URL module.
urlpatterns = [
    path("", views.benchmark_list, name="benchmark-list"),
    path("benchmarks/<slug:slug>/", views.leaderboard_page, name="leaderboard"),
    path("submissions/<int:pk>/", views.submission_page, name="submission"),
    path("api/benchmarks/<slug:slug>/leaderboard/", views.leaderboard_api, name="leaderboard-api"),
    path("", include("leaderboard.urls_board")),
    path("", include("leaderboard.urls_submissions")),
    path("", include("leaderboard.urls_uploads")),
    path("", include("leaderboard.urls_accounts")),
    path("api/", include("leaderboard.api.urls")),
]
