from django.conf import settings
from django.contrib import admin
from django.urls import include, path

urlpatterns = [
    path("admin/", admin.site.urls),
    path("", include("leaderboard.urls")),
    path("", include("annotation.urls")),
]

if settings.DEBUG and "FileSystemStorage" in settings.STORAGES["default"]["BACKEND"]:
    from django.conf.urls.static import static

    urlpatterns += static(settings.MEDIA_URL, document_root=settings.MEDIA_ROOT)
