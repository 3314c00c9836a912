"""The Compass's prompts shipped with the project, as the first version of each; edits add
versions."""

from pathlib import Path

from django.db import migrations

DEFAULTS = Path(__file__).resolve().parent.parent / "defaults"
KINDS = ("consult", "review")


def create_defaults(apps, schema_editor):
    prompt = apps.get_model("compass", "CompassPrompt")
    alias = schema_editor.connection.alias
    for kind in KINDS:
        if not prompt.objects.using(alias).filter(kind=kind).exists():
            content = (DEFAULTS / f"{kind}.md").read_text(encoding="utf-8")
            prompt.objects.using(alias).create(kind=kind, content=content)


class Migration(migrations.Migration):
    dependencies = [("compass", "0001_initial")]

    operations = [
        migrations.RunPython(
            create_defaults, migrations.RunPython.noop, hints={"model_name": "compassprompt"}
        ),
    ]
