"""Corrections, appended beside the event log and, like it, refusing every change: database
triggers (the PostgreSQL function ``silentstar_refuse_change`` is the event log's, heart 0002)."""

import django.db.models.deletion
import django.utils.timezone
from django.db import migrations, models

from silentstar.migration_sql import by_vendor

APPEND_ONLY = {
    "sqlite": [
        "CREATE TRIGGER events_correction_no_update BEFORE UPDATE ON events_correction "
        "BEGIN SELECT RAISE(ABORT, 'events_correction is append-only: UPDATE refused'); END",
        "CREATE TRIGGER events_correction_no_delete BEFORE DELETE ON events_correction "
        "BEGIN SELECT RAISE(ABORT, 'events_correction is append-only: DELETE refused'); END",
    ],
    "postgresql": [
        "CREATE TRIGGER events_correction_append_only BEFORE UPDATE OR DELETE "
        "ON events_correction FOR EACH ROW EXECUTE FUNCTION silentstar_refuse_change()",
        "CREATE TRIGGER events_correction_no_truncate BEFORE TRUNCATE ON events_correction "
        "FOR EACH STATEMENT EXECUTE FUNCTION silentstar_refuse_change()",
    ],
}
APPEND_ONLY_DROP = {
    "sqlite": [
        "DROP TRIGGER IF EXISTS events_correction_no_update",
        "DROP TRIGGER IF EXISTS events_correction_no_delete",
    ],
    "postgresql": [
        "DROP TRIGGER IF EXISTS events_correction_append_only ON events_correction",
        "DROP TRIGGER IF EXISTS events_correction_no_truncate ON events_correction",
    ],
}


class Migration(migrations.Migration):

    dependencies = [
        ('events', '0001_initial'),
        ('heart', '0002_event_log_append_only'),
    ]

    operations = [
        migrations.CreateModel(
            name='Correction',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('sequence', models.PositiveIntegerField(help_text='How many corrections of the event came before this one: of two made at once, only one can be the next.')),
                ('kind', models.CharField(choices=[('edit', 'Edit'), ('attribution', 'Attribution'), ('retraction', 'Retraction'), ('restoration', 'Restoration')], max_length=12)),
                ('text', models.TextField(blank=True, help_text="An edit's new text, tags and all.")),
                ('actor', models.CharField(blank=True, help_text="A re-attribution's speaker.", max_length=64)),
                ('made_by', models.CharField(help_text='Who made it: a username.', max_length=150)),
                ('made_at', models.DateTimeField(db_index=True, default=django.utils.timezone.now)),
                ('event', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='corrections', to='events.event')),
            ],
            options={
                'db_table': 'events_correction',
                'ordering': ['id'],
                'constraints': [models.UniqueConstraint(fields=('event', 'sequence'), name='events_correction_one_next'), models.CheckConstraint(condition=models.Q(('kind__in', ['edit', 'attribution', 'retraction', 'restoration'])), name='events_correction_kind_valid')],
            },
        ),
        migrations.RunPython(
            by_vendor(APPEND_ONLY, what="append-only triggers"),
            by_vendor(APPEND_ONLY_DROP, what="append-only triggers"),
            hints={"model_name": "correction"},
        ),
    ]
