from django.apps import AppConfig


class UploadsConfig(AppConfig):
    name = "leaderboard.uploads"
    label = "uploads"
    verbose_name = "Bundle uploads"
