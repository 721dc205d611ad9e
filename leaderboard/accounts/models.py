"""API tokens. Teams and memberships live with the submissions they own (evaluation.models)."""

from django.conf import settings
from django.db import models


class ApiToken(models.Model):
    """A bearer token for the API. Only the SHA-256 of the secret is kept: the secret is shown
    once, when the token is created, and cannot be recovered afterwards."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens"
    )
    name = models.CharField(max_length=100, help_text="What the token is for, e.g. 'CI uploads'")
    # The secret's first characters, so its owner can tell tokens apart; too short to guess from.
    prefix = models.CharField(max_length=12)
    secret_sha256 = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-pk"]

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"

    @property
    def is_revoked(self) -> bool:
        return self.revoked_at is not None


class EmailAddress(models.Model):
    """An account's e-mail address and whether its owner proved it is theirs (by following the
    link sent to it). Notices and password-reset links go to verified addresses only."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="email_address"
    )
    email = models.EmailField()
    verified_at = models.DateTimeField(null=True, blank=True)
    sent_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"{self.email} ({'verified' if self.verified_at else 'not verified'})"

    @property
    def is_verified(self) -> bool:
        return self.verified_at is not None


class SubmissionNotice(models.Model):
    """An e-mail sent about a submission (scored, failed, stalled): each kind once."""

    class Kind(models.TextChoices):
        SCORED = "scored"
        FAILED = "failed"
        STALLED = "stalled"

    submission = models.ForeignKey(
        "evaluation.Submission", on_delete=models.CASCADE, related_name="notices"
    )
    kind = models.CharField(max_length=10, choices=Kind.choices)
    recipients = models.JSONField(default=list)
    sent_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["submission", "kind"], name="submission_notice_once")
        ]

    def __str__(self) -> str:
        return f"{self.submission_id} {self.kind}"
