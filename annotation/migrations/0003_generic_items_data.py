"""An item's two audio clips move into its list of clips; the judge's boolean verdict becomes
its label under the study's two labels. Backward restores the columns."""

from django.db import migrations

BATCH = 500


def forward(apps, schema_editor):
    Item = apps.get_model("annotation", "Item")
    items = list(Item.objects.select_related("study"))
    for item in items:
        clips = []
        if item.conversation_audio_key:
            clips.append(
                {
                    "name": "context-0",
                    "role": "context",
                    "label": "Conversation",
                    "key": item.conversation_audio_key,
                    "sha256": item.conversation_audio_sha256,
                    "start": None,
                    "end": None,
                }
            )
        if item.response_audio_key:
            clips.append(
                {
                    "name": "response",
                    "role": "response",
                    "label": "Response",
                    "key": item.response_audio_key,
                    "sha256": item.response_audio_sha256,
                    "start": None,
                    "end": None,
                }
            )
        item.clips = clips
        if item.judge_verdict is not None:
            study = item.study
            item.judge_label = study.positive_label if item.judge_verdict else study.negative_label
    Item.objects.bulk_update(items, ["clips", "judge_label"], batch_size=BATCH)


def backward(apps, schema_editor):
    Item = apps.get_model("annotation", "Item")
    items = list(Item.objects.select_related("study"))
    for item in items:
        for clip in item.clips:
            prefix = "response" if clip.get("role") == "response" else "conversation"
            setattr(item, f"{prefix}_audio_key", clip.get("key", ""))
            setattr(item, f"{prefix}_audio_sha256", clip.get("sha256", ""))
        study = item.study
        item.judge_verdict = {study.positive_label: True, study.negative_label: False}.get(
            item.judge_label
        )
    Item.objects.bulk_update(
        items,
        [
            "conversation_audio_key",
            "conversation_audio_sha256",
            "response_audio_key",
            "response_audio_sha256",
            "judge_verdict",
        ],
        batch_size=BATCH,
    )


class Migration(migrations.Migration):
    dependencies = [("annotation", "0002_generic_items_fields")]

    operations = [migrations.RunPython(forward, backward)]
