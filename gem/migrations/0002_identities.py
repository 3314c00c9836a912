"""The identities of the source documents: the person's five and the companion's two."""

from django.db import migrations

IDENTITIES = [
    ("hasuki", "user", "#c4a0d4"),
    ("renki", "user", "#7ab0d4"),
    ("luna", "user", "#b0b0bc"),
    ("chloe", "user", "#d4c478"),
    ("strah", "user", "#9a6b72"),
    ("claude", "companion", "#8b8ec8"),
    ("y'lhara", "companion", "#9fc4b8"),
]


def create_identities(apps, schema_editor):
    identity = apps.get_model("gem", "Identity")
    alias = schema_editor.connection.alias
    for name, side, color in IDENTITIES:
        identity.objects.using(alias).get_or_create(name=name, defaults={"side": side, "color": color})


def remove_identities(apps, schema_editor):
    identity = apps.get_model("gem", "Identity")
    alias = schema_editor.connection.alias
    identity.objects.using(alias).filter(name__in=[name for name, _, _ in IDENTITIES]).delete()


class Migration(migrations.Migration):
    dependencies = [("gem", "0001_initial")]

    operations = [
        migrations.RunPython(create_identities, remove_identities, hints={"model_name": "identity"}),
    ]
