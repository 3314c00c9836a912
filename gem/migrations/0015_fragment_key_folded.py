from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("gem", "0014_fragment_triggers"),
    ]

    operations = [
        # Nullable, with no default: added in place on SQLite, keeping the triggers on the table.
        migrations.AddField(
            model_name="fragment",
            name="key_folded",
            field=models.CharField(
                editable=False,
                help_text="The key case folded: no two keys differ only in case.",
                max_length=300,
                null=True,
            ),
        ),
    ]
