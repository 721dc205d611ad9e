from django.urls import path

from leaderboard import views_submissions

urlpatterns = [
    path("submissions/<int:pk>/", views_submissions.submission_page, name="submission"),
]
