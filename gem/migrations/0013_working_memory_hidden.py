from importlib import import_module

from django.db import migrations, models

# Added in place on SQLite: copying the table would drop the triggers on it.
AddFieldInPlace = import_module("gem.migrations.0009_working_memory_meaning").AddFieldInPlace


class Migration(migrations.Migration):
    dependencies = [
        ("gem", "0012_constraint_messages"),
    ]

    operations = [
        AddFieldInPlace(
            model_name="workingmemory",
            name="hidden",
            field=models.BooleanField(
                default=False,
                help_text="A hidden plan: left out of Lingering until its resurfacing window "
                "opens, 48 hours before it is due.",
            ),
        ),
    ]
