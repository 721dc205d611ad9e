from django.contrib import admin, messages
from django.utils import timezone

from evaluation.models import Membership, Team
from leaderboard.accounts.models import ApiToken


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    list_display = ["name", "user", "prefix", "created_at", "last_used_at", "revoked_at"]
    list_filter = [("revoked_at", admin.EmptyFieldListFilter)]
    search_fields = ["name", "user__username", "prefix"]
    readonly_fields = ["user", "name", "prefix", "secret_sha256", "created_at", "last_used_at"]
    actions = ["revoke"]

    def has_add_permission(self, request):
        return False  # a secret is shown once, to its owner, on the tokens page

    @admin.action(description="Revoke selected tokens")
    def revoke(self, request, queryset):
        count = queryset.filter(revoked_at__isnull=True).update(revoked_at=timezone.now())
        self.message_user(request, f"{count} token(s) revoked", messages.SUCCESS)


class MembershipInline(admin.TabularInline):
    model = Membership
    extra = 0
    autocomplete_fields = ["user"]


class TeamAdmin(admin.ModelAdmin):
    list_display = [
        "name",
        "slug",
        "max_submissions_per_day",
        "max_concurrent_evaluations",
        "max_judge_spend_per_month",
    ]
    search_fields = ["name", "slug"]
    prepopulated_fields = {"slug": ["name"]}
    inlines = [MembershipInline]


# Teams are modelled in evaluation; their members are managed here, unless evaluation's admin
# already offers them.
if not admin.site.is_registered(Team):
    admin.site.register(Team, TeamAdmin)
