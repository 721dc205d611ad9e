from django.urls import path

from leaderboard import views

urlpatterns = [
    path("", views.benchmark_list, name="benchmark-list"),
    path("benchmarks/<slug:slug>/", views.leaderboard_page, name="leaderboard"),
    path("api/benchmarks/<slug:slug>/leaderboard/", views.leaderboard_api, name="leaderboard-api"),
]
