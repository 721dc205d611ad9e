from django.contrib import admin

from leaderboard.uploads.models import Upload


@admin.register(Upload)
class UploadAdmin(admin.ModelAdmin):
    list_display = [
        "created_at",
        "team",
        "user",
        "benchmark",
        "method",
        "status",
        "size",
        "submission",
    ]
    list_filter = ["status", "method", "benchmark"]
    search_fields = ["filename", "system_name", "team__name", "user__username", "idempotency_key"]
    list_select_related = ["team", "user", "benchmark", "submission"]
    # The record of what arrived and what validation said: read-only.
    readonly_fields = [field.name for field in Upload._meta.fields]

    def has_add_permission(self, request):
        return False
