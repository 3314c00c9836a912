"""The event index follows corrections: a view of the log as corrected, read by the index.

``lens_event_corrected`` is the log as its corrections leave it (``events.corrected``'s rules in
SQL): the latest edit's text, the latest re-attribution's speaker, and no text at all while the
latest retraction or restoration is a retraction. The index's context of a new event (the two
events before it) is read from it, so a new event's row never holds words taken back; the rows
a correction changes are written again by ``lens.reindex.event_index_refresh``.
"""

import importlib

from django.db import migrations

from silentstar.migration_sql import by_vendor


def _latest(kinds: str, column: str) -> str:
    return (
        f"(SELECT c.{column} FROM events_correction c WHERE c.event_id = e.id "
        f"AND c.kind IN ({kinds}) ORDER BY c.id DESC LIMIT 1)"
    )


RETRACTED = _latest("'retraction', 'restoration'", "kind")
EDITED = _latest("'edit'", "text")
ATTRIBUTED = _latest("'attribution'", "actor")
VIEW = (
    "CREATE VIEW lens_event_corrected AS SELECT e.id, e.ts, "
    f"CASE WHEN {RETRACTED} = 'retraction' THEN '' ELSE coalesce({EDITED}, e.content) END "
    f"AS content, coalesce({ATTRIBUTED}, e.actor) AS actor FROM heart_event e"
)


def _sqlite_trigger(source: str) -> str:
    """0001's insert trigger, with the context read from ``source``."""
    dated = importlib.import_module("lens.migrations.0001_search_indexes")._sqlite_date_words
    return (
        "CREATE TRIGGER lens_event_fts_insert AFTER INSERT ON heart_event BEGIN "
        "INSERT INTO lens_event_fts(rowid, content, speaker, dated, context) VALUES ("
        f"new.id, new.content, new.actor, {dated('new.ts')}, "
        "coalesce((SELECT group_concat(content, ' ') FROM "
        f"(SELECT content FROM {source} WHERE id < new.id ORDER BY id DESC LIMIT 2)), '')); END"
    )


def _postgres_before(source: str) -> str:
    return f"""
    CREATE OR REPLACE FUNCTION lens_event_before(event_id bigint) RETURNS text AS $$
      SELECT coalesce(string_agg(content, ' '), '') FROM (
        SELECT content FROM {source} WHERE id < event_id ORDER BY id DESC LIMIT 2
      ) AS before
    $$ LANGUAGE sql STABLE
    """


DROP_TRIGGER = "DROP TRIGGER IF EXISTS lens_event_fts_insert"
FORWARD = {
    "sqlite": [VIEW, DROP_TRIGGER, _sqlite_trigger("lens_event_corrected")],
    "postgresql": [VIEW, _postgres_before("lens_event_corrected")],
}
BACKWARD = {
    "sqlite": [DROP_TRIGGER, _sqlite_trigger("heart_event"), "DROP VIEW lens_event_corrected"],
    "postgresql": [_postgres_before("heart_event"), "DROP VIEW lens_event_corrected"],
}


class Migration(migrations.Migration):
    dependencies = [
        ("lens", "0008_summary_index"),
        ("events", "0002_correction"),
    ]

    operations = [
        migrations.RunPython(
            by_vendor(FORWARD, what="the corrected log's view"),
            by_vendor(BACKWARD, what="the corrected log's view"),
            hints={"store": "events"},
        ),
    ]
