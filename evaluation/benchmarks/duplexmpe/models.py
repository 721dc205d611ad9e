"""The plug-in's one table: transcripts of judged clips, the ASR cache (transcribing.py)."""

from django.db import models


class AsrTranscript(models.Model):
    """The text one ASR gave for one clip. Keyed by the clip's SHA-256 and the ASR's identity
    (model, language), so the same audio is never sent twice, in any submission."""

    cache_key = models.CharField(max_length=64, unique=True)
    audio_sha256 = models.CharField(max_length=64)
    identity = models.JSONField(help_text="What produced the text: API, model, language")
    text = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"{self.audio_sha256[:12]} by {self.identity.get('model', '?')}"
