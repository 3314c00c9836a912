"""A change marker per working-memory row, kept by triggers whatever writes the row.

``gem_workingmemory_change`` holds one line per working-memory id that was ever inserted,
updated or deleted, with ``seq``: a number that only grows, taken from a counter as the
change is made. A process that keeps the active rows between turns asks only for the ids
changed since the ``seq`` it last saw (``gem.selectors``), so an edit made anywhere — ingest,
the decay sweep, the admin, raw SQL — is seen on the next read.

On PostgreSQL the writers of working memory take turns on the change table (a lock held to
commit), so ``seq`` follows commit order: a reader never sees a change while an earlier one
is still uncommitted. SQLite has one writer at a time anyway.
"""

from django.db import migrations

TABLE = "gem_workingmemory_change"

SQLITE_CREATE = [
    f"CREATE TABLE {TABLE} (wm_id integer NOT NULL PRIMARY KEY, seq integer NOT NULL)",
    f"CREATE INDEX {TABLE}_seq ON {TABLE} (seq)",
]
SQLITE_MARK = (
    f"INSERT INTO {TABLE} (wm_id, seq) "
    f"VALUES ({{row}}.id, (SELECT coalesce(max(seq), 0) + 1 FROM {TABLE})) "
    "ON CONFLICT (wm_id) DO UPDATE SET seq = excluded.seq;"
)
SQLITE_TRIGGERS = {
    "insert": ("AFTER INSERT", SQLITE_MARK.format(row="NEW")),
    "update": (
        "AFTER UPDATE",
        SQLITE_MARK.format(row="NEW")
        + f" INSERT INTO {TABLE} (wm_id, seq) "
        f"SELECT OLD.id, (SELECT max(seq) + 1 FROM {TABLE}) WHERE OLD.id <> NEW.id "
        "ON CONFLICT (wm_id) DO UPDATE SET seq = excluded.seq;",
    ),
    "delete": ("AFTER DELETE", SQLITE_MARK.format(row="OLD")),
}

POSTGRES_CREATE = [
    f"CREATE TABLE {TABLE} (wm_id bigint NOT NULL PRIMARY KEY, seq bigint NOT NULL)",
    f"CREATE INDEX {TABLE}_seq ON {TABLE} (seq)",
    f"""
CREATE OR REPLACE FUNCTION gem_workingmemory_mark_change() RETURNS trigger AS $$
DECLARE
  changed bigint[];
  changed_id bigint;
BEGIN
  IF TG_OP = 'INSERT' THEN
    changed := ARRAY[NEW.id];
  ELSIF TG_OP = 'DELETE' THEN
    changed := ARRAY[OLD.id];
  ELSIF OLD.id = NEW.id THEN
    changed := ARRAY[NEW.id];
  ELSE
    changed := ARRAY[NEW.id, OLD.id];
  END IF;
  -- Writers take turns until commit, so seq grows in commit order.
  LOCK TABLE {TABLE} IN SHARE ROW EXCLUSIVE MODE;
  FOREACH changed_id IN ARRAY changed LOOP
    INSERT INTO {TABLE} (wm_id, seq)
    VALUES (changed_id, (SELECT coalesce(max(seq), 0) + 1 FROM {TABLE}))
    ON CONFLICT (wm_id) DO UPDATE SET seq = excluded.seq;
  END LOOP;
  RETURN NULL;
END;
$$ LANGUAGE plpgsql
""",
    "CREATE TRIGGER gem_workingmemory_mark_change AFTER INSERT OR UPDATE OR DELETE "
    "ON gem_workingmemory FOR EACH ROW EXECUTE FUNCTION gem_workingmemory_mark_change()",
]
POSTGRES_DROP = [
    "DROP TRIGGER IF EXISTS gem_workingmemory_mark_change ON gem_workingmemory",
    "DROP FUNCTION IF EXISTS gem_workingmemory_mark_change()",
    f"DROP TABLE IF EXISTS {TABLE}",
]


def install(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    if vendor == "sqlite":
        for statement in SQLITE_CREATE:
            schema_editor.execute(statement)
        for name, (when, body) in SQLITE_TRIGGERS.items():
            schema_editor.execute(
                f"CREATE TRIGGER gem_workingmemory_mark_{name} {when} ON gem_workingmemory "
                f"BEGIN {body} END"
            )
    elif vendor == "postgresql":
        for statement in POSTGRES_CREATE:
            schema_editor.execute(statement, params=None)
    else:
        raise RuntimeError(f"No working-memory change triggers for the {vendor} backend")


def remove(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    if vendor == "sqlite":
        for name in SQLITE_TRIGGERS:
            schema_editor.execute(f"DROP TRIGGER IF EXISTS gem_workingmemory_mark_{name}")
        schema_editor.execute(f"DROP TABLE IF EXISTS {TABLE}")
    elif vendor == "postgresql":
        for statement in POSTGRES_DROP:
            schema_editor.execute(statement)


class Migration(migrations.Migration):
    dependencies = [("gem", "0004_default_wake_texts")]

    operations = [
        migrations.RunPython(install, remove, hints={"model_name": "workingmemory"}),
    ]
