"""Vectors of events for the optional semantic search (``lens/semantic.py``).

One row per event, written by ``lens.semantic.vectors_fill`` (the log itself is never
changed): the event's sentence vector as 16-bit floats. The table lives in the events store
beside the log. Emptying the log empties it too (SQLite: a DELETE, PostgreSQL: a TRUNCATE —
only the test suite's flush ever does either), so a vector never outlives its event.
"""

from django.db import migrations

from silentstar.migration_sql import by_vendor

SQLITE = [
    "CREATE TABLE lens_event_vector (event_id INTEGER PRIMARY KEY, vector BLOB NOT NULL)",
    "CREATE TRIGGER lens_event_vector_delete AFTER DELETE ON heart_event BEGIN "
    "DELETE FROM lens_event_vector WHERE event_id = old.id; END",
]
SQLITE_DROP = [
    "DROP TRIGGER IF EXISTS lens_event_vector_delete",
    "DROP TABLE IF EXISTS lens_event_vector",
]
POSTGRES = [
    "CREATE TABLE lens_event_vector (event_id bigint PRIMARY KEY, vector bytea NOT NULL)",
    "CREATE FUNCTION lens_event_vector_truncate() RETURNS trigger AS $$ "
    "BEGIN TRUNCATE lens_event_vector; RETURN NULL; END; $$ LANGUAGE plpgsql",
    "CREATE TRIGGER lens_event_vector_truncate AFTER TRUNCATE ON heart_event "
    "FOR EACH STATEMENT EXECUTE FUNCTION lens_event_vector_truncate()",
    "CREATE FUNCTION lens_event_vector_delete() RETURNS trigger AS $$ "
    "BEGIN DELETE FROM lens_event_vector WHERE event_id = old.id; RETURN NULL; END; $$ "
    "LANGUAGE plpgsql",
    "CREATE TRIGGER lens_event_vector_delete AFTER DELETE ON heart_event "
    "FOR EACH ROW EXECUTE FUNCTION lens_event_vector_delete()",
]
POSTGRES_DROP = [
    "DROP TRIGGER IF EXISTS lens_event_vector_delete ON heart_event",
    "DROP FUNCTION IF EXISTS lens_event_vector_delete()",
    "DROP TRIGGER IF EXISTS lens_event_vector_truncate ON heart_event",
    "DROP FUNCTION IF EXISTS lens_event_vector_truncate()",
    "DROP TABLE IF EXISTS lens_event_vector",
]


class Migration(migrations.Migration):
    dependencies = [("lens", "0002_index_truncate")]

    operations = [
        migrations.RunPython(
            by_vendor({"sqlite": SQLITE, "postgresql": POSTGRES}, what="event vectors"),
            by_vendor({"sqlite": SQLITE_DROP, "postgresql": POSTGRES_DROP}, what="event vectors"),
            hints={"store": "events"},
        ),
    ]
