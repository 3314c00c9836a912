"""On PostgreSQL, emptying an indexed table with TRUNCATE empties its search index too.

TRUNCATE fires no row triggers, so without these the side tables of migration 0001 would keep
rows for fragments, working memory or events that are gone: a fragment created again under the
same key would collide with its old index row, and a search could name what no longer exists.
(The event log refuses TRUNCATE; its trigger matters only where that guard is lifted, as the
test suite's flush does.) SQLite has no TRUNCATE: its emptying is a DELETE, which the row
triggers of 0001 already follow.
"""

from django.db import migrations

# (indexed table, its index, store)
INDEXES = [
    ("heart_event", "lens_event_index", "events"),
    ("gem_fragment", "lens_fragment_index", "default"),
    ("gem_workingmemory", "lens_wm_index", "default"),
]


def _install(table: str, index: str):
    def run(apps, schema_editor):
        if schema_editor.connection.vendor != "postgresql":
            return
        schema_editor.execute(
            f"CREATE FUNCTION {index}_truncate() RETURNS trigger AS $$ "
            f"BEGIN TRUNCATE {index}; RETURN NULL; END; $$ LANGUAGE plpgsql"
        )
        schema_editor.execute(
            f"CREATE TRIGGER {index}_truncate AFTER TRUNCATE ON {table} "
            f"FOR EACH STATEMENT EXECUTE FUNCTION {index}_truncate()"
        )

    return run


def _remove(table: str, index: str):
    def run(apps, schema_editor):
        if schema_editor.connection.vendor != "postgresql":
            return
        schema_editor.execute(f"DROP TRIGGER IF EXISTS {index}_truncate ON {table}")
        schema_editor.execute(f"DROP FUNCTION IF EXISTS {index}_truncate()")

    return run


class Migration(migrations.Migration):
    dependencies = [("lens", "0001_search_indexes")]

    operations = [
        migrations.RunPython(_install(table, index), _remove(table, index), hints={"store": store})
        for table, index, store in INDEXES
    ]
