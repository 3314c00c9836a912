"""Two more kinds of correction, for the replies to one message: one set aside for another, one
chosen again. On SQLite changing the kinds' check remakes the table, which drops its triggers:
they are made again after it (and after it is remade back, when this is undone)."""

import importlib

from django.db import migrations, models


def triggers_again(apps, schema_editor):
    if schema_editor.connection.vendor != "sqlite":
        return  # PostgreSQL changes the check in place, its triggers kept
    purges = importlib.import_module("events.migrations.0003_purge")
    allowed = (
        f"{purges.PURGED.format(event='old.event_id')} AND {purges.CORRECTION_BLANKED}"
    )
    statements = [
        "DROP TRIGGER IF EXISTS events_correction_no_delete",
        "CREATE TRIGGER events_correction_no_delete BEFORE DELETE ON events_correction "
        "BEGIN SELECT RAISE(ABORT, 'events_correction is append-only: DELETE refused'); END",
        *purges._sqlite_update("events_correction", allowed=allowed),
    ]
    for statement in statements:
        schema_editor.execute(statement, params=None)


class Migration(migrations.Migration):

    dependencies = [
        ('events', '0004_turns_of_one_event'),
    ]

    operations = [
        migrations.RunPython(
            migrations.RunPython.noop, triggers_again, hints={"model_name": "correction"}
        ),
        migrations.RemoveConstraint(
            model_name='correction',
            name='events_correction_kind_valid',
        ),
        migrations.AlterField(
            model_name='correction',
            name='kind',
            field=models.CharField(choices=[('edit', 'Edit'), ('attribution', 'Attribution'), ('retraction', 'Retraction'), ('restoration', 'Restoration'), ('aside', 'Aside'), ('chosen', 'Chosen')], max_length=12),
        ),
        migrations.AddConstraint(
            model_name='correction',
            constraint=models.CheckConstraint(condition=models.Q(('kind__in', ['edit', 'attribution', 'retraction', 'restoration', 'aside', 'chosen'])), name='events_correction_kind_valid'),
        ),
        migrations.RunPython(
            triggers_again, migrations.RunPython.noop, hints={"model_name": "correction"}
        ),
    ]
