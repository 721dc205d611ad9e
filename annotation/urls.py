from django.urls import path

from annotation import views, views_rater

app_name = "annotation"

urlpatterns = [
    # Staff
    path("studies/", views.study_list, name="studies"),
    path("studies/new/", views.study_new, name="study-new"),
    path("studies/<slug:slug>/", views.study_dashboard, name="study"),
    path("studies/<slug:slug>/status/", views.study_status, name="study-status"),
    path("studies/<slug:slug>/snapshots/", views.study_snapshot, name="study-snapshot"),
    path("studies/<slug:slug>/guideline/", views.study_guideline, name="study-guideline"),
    path("studies/<slug:slug>/invites/", views.study_invite, name="study-invite"),
    path("studies/<slug:slug>/extend/", views.study_extend, name="study-extend"),
    path("studies/<slug:slug>/checks/", views.study_check_item, name="study-check"),
    path("studies/<slug:slug>/raters/<int:rater_id>/", views.study_rater, name="study-rater"),
    path("studies/<slug:slug>/ratings.csv", views.study_export_csv, name="export-csv"),
    path("studies/<slug:slug>/ratings.json", views.study_export_json, name="export-json"),
    path("studies/<slug:slug>/snapshots/<str:sha256>/", views.snapshot_page, name="snapshot"),
    path(
        "studies/<slug:slug>/snapshots/<str:sha256>.json",
        views.snapshot_json,
        name="snapshot-json",
    ),
    path("studies/<slug:slug>/join/", views_rater.study_join, name="study-join"),
    # Raters (invite links)
    path("rate/audio/<str:token>/", views_rater.rater_audio, name="rater-audio"),
    path("rate/audio/<str:token>/peaks/", views_rater.rater_audio_peaks, name="rater-audio-peaks"),
    path("rate/audio/<str:token>/renew/", views_rater.rater_audio_renew, name="rater-audio-renew"),
    path("rate/<str:token>/", views_rater.rate, name="rate"),
    path("rate/<str:token>/start/", views_rater.rate_start, name="rate-start"),
    path("rate/<str:token>/items/<str:code>/events/", views_rater.rate_events, name="rate-events"),
    path("rate/<str:token>/items/<str:code>/submit/", views_rater.rate_submit, name="rate-submit"),
    path("rate/<str:token>/items/<str:code>/", views_rater.rate_review, name="rate-review"),
    path("rate/<str:token>/items/<str:code>/revise/", views_rater.rate_revise, name="rate-revise"),
]
