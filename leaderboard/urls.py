from django.urls import include, path

# Each area of the site keeps its own URL module.
urlpatterns = [
    path("", include("leaderboard.urls_board")),
    path("", include("leaderboard.urls_submissions")),
    path("", include("leaderboard.urls_compare")),
    path("", include("leaderboard.urls_uploads")),
    path("", include("leaderboard.urls_accounts")),
    path("api/", include("leaderboard.api.urls")),
]
