from django.urls import path

from leaderboard.api import submit

# Included under /api/ ahead of the submissions list: POST creates here, and the view hands
# every other method on the same path to the list.
urlpatterns = [
    path("submissions/", submit.submission_create, name="api-submission-create"),
    path("uploads/<uuid:pk>/", submit.upload_state_view, name="api-upload-state"),
]
