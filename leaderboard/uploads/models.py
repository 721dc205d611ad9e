"""Bundle uploads: the bytes on their way in, and what validation said about them.

An upload is created when a browser starts sending a bundle (or when an API create succeeds) and
records the outcome: rejected with its validation report, or accepted with its submission.
"""

import uuid

from django.conf import settings
from django.db import models
from django.db.models import Q

from evaluation.models import Benchmark, Judge, Submission, Team


class Upload(models.Model):
    class Method(models.TextChoices):
        CHUNKED = "chunked", "Chunked to the server"
        S3 = "s3", "Direct to S3 (multipart)"
        API = "api", "API create"

    class Status(models.TextChoices):
        UPLOADING = "uploading"  # bytes arriving, or all there and waiting to be finished
        FINISHING = "finishing"  # all there, queued for a worker to validate and submit
        VALIDATING = "validating"  # a worker is validating and submitting it
        REJECTED = "rejected"
        ACCEPTED = "accepted"
        CANCELLED = "cancelled"
        EXPIRED = "expired"

    # Random, so that the upload's URLs reveal nothing about other uploads.
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    benchmark = models.ForeignKey(Benchmark, on_delete=models.CASCADE, related_name="+")
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="uploads")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="+"
    )
    method = models.CharField(max_length=10, choices=Method.choices)
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.UPLOADING)
    filename = models.CharField(max_length=255)
    size = models.BigIntegerField(help_text="Bytes the client announced")
    received = models.BigIntegerField(default=0, help_text="Bytes on the server (chunked)")
    # Submission fields chosen on the form.
    system_name = models.CharField(max_length=200)
    system_type = models.CharField(max_length=50, blank=True)
    # The choices the benchmark asks a submitter to declare with an upload (a run mode, say).
    options = models.JSONField(default=dict, blank=True)
    judge = models.ForeignKey(Judge, on_delete=models.SET_NULL, null=True, related_name="+")
    allow_partial = models.BooleanField(default=False)
    publish = models.BooleanField(default=False)
    # Direct-to-S3 uploads: the object being assembled and its multipart upload id.
    s3_key = models.CharField(max_length=500, blank=True)
    s3_upload_id = models.CharField(max_length=500, blank=True)
    part_bytes = models.PositiveBigIntegerField(default=0)
    # API creates: the client's Idempotency-Key and a hash of what it sent with it.
    idempotency_key = models.CharField(max_length=100, blank=True)
    fingerprint = models.CharField(max_length=64, blank=True)
    report = models.JSONField(null=True, blank=True)
    error = models.TextField(blank=True, help_text="Why the last finish did not go through")
    submission = models.ForeignKey(
        Submission, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["team", "idempotency_key"],
                condition=~Q(idempotency_key=""),
                name="upload_idempotency_key",
            )
        ]
        indexes = [models.Index(fields=["status", "updated_at"])]

    def __str__(self) -> str:
        return f"{self.filename} ({self.status})"

    @property
    def is_open(self) -> bool:
        return self.status == self.Status.UPLOADING
