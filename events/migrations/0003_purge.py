"""Purge, the one exception to the append-only log: a row of ``events_purge`` (itself
append-only) lets the log's row of that event change, and the text of its corrections, in one
way only: blanked. Every other change is still refused by the database, on SQLite (a ``WHEN``
on the update triggers) and on PostgreSQL (a guard function in place of the refusal)."""

import django.db.models.deletion
import django.utils.timezone
from django.db import migrations, models

from silentstar.migration_sql import by_vendor

REFUSED = "SELECT RAISE(ABORT, '{table} is append-only: UPDATE refused')"
PURGED = "EXISTS (SELECT 1 FROM events_purge p WHERE p.event_id = {event})"
EVENT_BLANKED = (
    "new.id = old.id AND new.ts = old.ts AND new.actor = old.actor AND new.content = '' "
    "AND new.image = ''"
)
CORRECTION_BLANKED = (
    "new.id = old.id AND new.event_id = old.event_id AND new.sequence = old.sequence "
    "AND new.kind = old.kind AND new.actor = old.actor AND new.made_by = old.made_by "
    "AND new.made_at = old.made_at AND new.text = ''"
)


def _sqlite_update(table: str, *, allowed: str | None) -> list[str]:
    when = f"WHEN NOT ({allowed}) " if allowed else ""
    return [
        f"DROP TRIGGER IF EXISTS {table}_no_update",
        f"CREATE TRIGGER {table}_no_update BEFORE UPDATE ON {table} {when}"
        f"BEGIN {REFUSED.format(table=table)}; END",
    ]


def _postgres_guard(table: str, *, blanked: str, event: str) -> list[str]:
    condition = f"{blanked.replace('new.', 'NEW.').replace('old.', 'OLD.')} AND "
    condition += PURGED.format(event=event)
    return [
        f"""
        CREATE OR REPLACE FUNCTION {table}_purge_guard() RETURNS trigger AS $$
        BEGIN
          IF TG_OP = 'UPDATE' AND {condition} THEN
            RETURN NEW;
          END IF;
          RAISE EXCEPTION '% is append-only: % refused', TG_TABLE_NAME, TG_OP
            USING ERRCODE = 'restrict_violation';
        END;
        $$ LANGUAGE plpgsql
        """,
        f"DROP TRIGGER IF EXISTS {table}_append_only ON {table}",
        f"CREATE TRIGGER {table}_append_only BEFORE UPDATE OR DELETE ON {table} "
        f"FOR EACH ROW EXECUTE FUNCTION {table}_purge_guard()",
    ]


def _postgres_strict(table: str) -> list[str]:
    return [
        f"DROP TRIGGER IF EXISTS {table}_append_only ON {table}",
        f"CREATE TRIGGER {table}_append_only BEFORE UPDATE OR DELETE ON {table} "
        "FOR EACH ROW EXECUTE FUNCTION silentstar_refuse_change()",
        f"DROP FUNCTION IF EXISTS {table}_purge_guard()",
    ]


PURGE_APPEND_ONLY = {
    "sqlite": [
        *_sqlite_update("events_purge", allowed=None),
        "CREATE TRIGGER events_purge_no_delete BEFORE DELETE ON events_purge "
        "BEGIN SELECT RAISE(ABORT, 'events_purge is append-only: DELETE refused'); END",
    ],
    "postgresql": [
        "CREATE TRIGGER events_purge_append_only BEFORE UPDATE OR DELETE ON events_purge "
        "FOR EACH ROW EXECUTE FUNCTION silentstar_refuse_change()",
        "CREATE TRIGGER events_purge_no_truncate BEFORE TRUNCATE ON events_purge "
        "FOR EACH STATEMENT EXECUTE FUNCTION silentstar_refuse_change()",
    ],
}
FORWARD = {
    "sqlite": [
        *PURGE_APPEND_ONLY["sqlite"],
        *_sqlite_update(
            "heart_event", allowed=f"{PURGED.format(event='old.id')} AND {EVENT_BLANKED}"
        ),
        *_sqlite_update(
            "events_correction",
            allowed=f"{PURGED.format(event='old.event_id')} AND {CORRECTION_BLANKED}",
        ),
    ],
    "postgresql": [
        *PURGE_APPEND_ONLY["postgresql"],
        *_postgres_guard("heart_event", blanked=EVENT_BLANKED, event="OLD.id"),
        *_postgres_guard("events_correction", blanked=CORRECTION_BLANKED, event="OLD.event_id"),
    ],
}
BACKWARD = {
    "sqlite": [
        "DROP TRIGGER IF EXISTS events_purge_no_update",
        "DROP TRIGGER IF EXISTS events_purge_no_delete",
        *_sqlite_update("heart_event", allowed=None),
        *_sqlite_update("events_correction", allowed=None),
    ],
    "postgresql": [
        "DROP TRIGGER IF EXISTS events_purge_append_only ON events_purge",
        "DROP TRIGGER IF EXISTS events_purge_no_truncate ON events_purge",
        *_postgres_strict("heart_event"),
        *_postgres_strict("events_correction"),
    ],
}


class Migration(migrations.Migration):

    dependencies = [
        ('events', '0002_correction'),
        ('heart', '0002_event_log_append_only'),
    ]

    operations = [
        migrations.CreateModel(
            name='Purge',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('purged_by', models.CharField(help_text='Who purged it: a username.', max_length=150)),
                ('purged_at', models.DateTimeField(default=django.utils.timezone.now)),
                ('blanked', models.JSONField(default=dict, help_text='Where its text was blanked: copies by place, counted.')),
                ('event', models.OneToOneField(on_delete=django.db.models.deletion.PROTECT, related_name='purge', to='events.event')),
            ],
            options={
                'db_table': 'events_purge',
            },
        ),
        migrations.RunPython(
            by_vendor(FORWARD, what="the purge's way through the append-only triggers"),
            by_vendor(BACKWARD, what="the purge's way through the append-only triggers"),
            hints={"model_name": "purge"},
        ),
    ]
