from django.db import migrations, models
from django.db.models import F


def count_bundles(apps, schema_editor):
    # What is known of earlier submissions: their bundles.
    apps.get_model("evaluation", "Submission").objects.update(stored_bytes=F("bundle_size"))


class Migration(migrations.Migration):
    dependencies = [("evaluation", "0015_worker_beats")]

    operations = [
        migrations.AddField(
            model_name="submission",
            name="stored_bytes",
            field=models.BigIntegerField(default=0),
        ),
        migrations.RunPython(count_bundles, migrations.RunPython.noop),
    ]
