from django.contrib import admin
from django.urls import include, path

from config import views
from leaderboard.accounts.forms import ThrottledAdminAuthenticationForm

# The admin's login counts failures like the site's own.
admin.site.login_form = ThrottledAdminAuthenticationForm

# No MEDIA_URL route: every stored file (bundles, audio) is served by a view that checks who may
# see it, through short-lived signed URLs.
urlpatterns = [
    path("admin/", admin.site.urls),
    path("assets/plotly-<str:version>.min.js", views.plotly_js, name="plotly-js"),
    path("", include("leaderboard.urls")),
    path("", include("annotation.urls")),
]
