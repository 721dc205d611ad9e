from django.urls import path

from leaderboard.uploads import views

urlpatterns = [
    path("benchmarks/<slug:slug>/submit/", views.submit_page, name="upload-page"),
    path("benchmarks/<slug:slug>/submit/start/", views.upload_start, name="upload-start"),
    path("uploads/<uuid:pk>/", views.upload_detail, name="upload-detail"),
    path("uploads/<uuid:pk>/state/", views.upload_state, name="upload-state"),
    path("uploads/<uuid:pk>/chunk/", views.upload_chunk, name="upload-chunk"),
    path("uploads/<uuid:pk>/parts/", views.upload_parts, name="upload-parts"),
    path("uploads/<uuid:pk>/finish/", views.upload_finish, name="upload-finish"),
    path("uploads/<uuid:pk>/cancel/", views.upload_cancel, name="upload-cancel"),
]
