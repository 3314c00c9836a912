"""The wake texts shipped with the project, as the first version of each; edits add versions."""

from pathlib import Path

from django.db import migrations

DEFAULTS = Path(__file__).resolve().parent.parent / "defaults"


def create_defaults(apps, schema_editor):
    wake_text = apps.get_model("gem", "WakeText")
    alias = schema_editor.connection.alias
    for kind, filename in (("wake", "wake.md"), ("image", "image.md")):
        if not wake_text.objects.using(alias).filter(kind=kind).exists():
            content = (DEFAULTS / filename).read_text(encoding="utf-8")
            wake_text.objects.using(alias).create(kind=kind, content=content)


class Migration(migrations.Migration):
    dependencies = [("gem", "0003_ingest_record")]

    operations = [
        migrations.RunPython(
            create_defaults, migrations.RunPython.noop, hints={"model_name": "waketext"}
        ),
    ]
