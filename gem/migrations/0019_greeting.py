"""The greeting, a wake text of its own kind: the companion's first words on a new installation,
shipped as its first version (``gem/defaults/greeting.md``); edits add versions.

SQLite changes a check constraint by copying the table, which drops the Gem's change marks on
it (``0007_gem_changes``): they are put back after the copy, either way."""

from importlib import import_module
from pathlib import Path

from django.db import migrations, models

DEFAULTS = Path(__file__).resolve().parent.parent / "defaults"
changes = import_module("gem.migrations.0007_gem_changes")
WAKE_TEXTS = {"model_name": "waketext"}


def change_marks_back(apps, schema_editor):
    if schema_editor.connection.vendor != "sqlite":
        return  # PostgreSQL changes the constraint in place, keeping the table's triggers
    for op, trigger in changes._sqlite_triggers("gem_waketext").items():
        schema_editor.execute(f"CREATE TRIGGER IF NOT EXISTS gem_waketext_mark_{op} {trigger}")


def greeting_shipped(apps, schema_editor):
    wake_text = apps.get_model("gem", "WakeText")
    alias = schema_editor.connection.alias
    if not wake_text.objects.using(alias).filter(kind="greeting").exists():
        content = (DEFAULTS / "greeting.md").read_text(encoding="utf-8").strip()
        wake_text.objects.using(alias).create(kind="greeting", content=content)


def greetings_removed(apps, schema_editor):
    wake_text = apps.get_model("gem", "WakeText")
    wake_text.objects.using(schema_editor.connection.alias).filter(kind="greeting").delete()


class Migration(migrations.Migration):
    dependencies = [("gem", "0018_forgotten")]

    operations = [
        migrations.RunPython(migrations.RunPython.noop, change_marks_back, hints=WAKE_TEXTS),
        migrations.RemoveConstraint(model_name="waketext", name="gem_waketext_kind_valid"),
        migrations.AlterField(
            model_name="waketext",
            name="kind",
            field=models.CharField(
                choices=[
                    ("wake", "wake context"),
                    ("image", "image context"),
                    ("greeting", "greeting"),
                ],
                max_length=8,
            ),
        ),
        migrations.AddConstraint(
            model_name="waketext",
            constraint=models.CheckConstraint(
                condition=models.Q(("kind__in", ["wake", "image", "greeting"])),
                name="gem_waketext_kind_valid",
                violation_error_message="The kind must be one of those offered.",
            ),
        ),
        migrations.RunPython(change_marks_back, migrations.RunPython.noop, hints=WAKE_TEXTS),
        migrations.RunPython(greeting_shipped, greetings_removed, hints=WAKE_TEXTS),
    ]
