"""Change numbers for what every turn reads of the Gem, kept by triggers whatever writes.

``gem_change`` holds one line per changed thing: a working-memory row (by id), or a whole
table for the identities, wake texts, ambient prose, fragments and edges (row id 0, as for a
TRUNCATE of working memory), with ``seq``, a number that only grows, renewed at every insert, update or
delete. A process that keeps these between turns (``gem.selectors.GemCopy``) asks only for
what changed after the ``seq`` it last saw, so an edit made anywhere — ingest, the decay
sweep, the admin, raw SQL — is seen on its next read.

On PostgreSQL the writers of these tables take turns on ``gem_change`` (a lock held until
commit), so ``seq`` follows commit order: a reader never sees a change while an earlier one
is still uncommitted. SQLite has one writer at a time anyway.
"""

from django.db import migrations

TABLE = "gem_change"
BY_ROW = ("gem_workingmemory",)
WHOLE = ("gem_identity", "gem_waketext", "gem_ambientprose", "gem_fragment", "gem_fragmentedge")

SQLITE_CREATE = [
    f"CREATE TABLE {TABLE} (source varchar(64) NOT NULL, row_id integer NOT NULL, "
    "seq integer NOT NULL, PRIMARY KEY (source, row_id))",
    f"CREATE INDEX {TABLE}_seq ON {TABLE} (seq)",
]
SQLITE_MARK = (
    f"INSERT INTO {TABLE} (source, row_id, seq) "
    f"VALUES ('{{table}}', {{row}}, (SELECT coalesce(max(seq), 0) + 1 FROM {TABLE})) "
    "ON CONFLICT (source, row_id) DO UPDATE SET seq = excluded.seq;"
)
SQLITE_OPS = ("insert", "update", "update_old_id", "delete")


def _sqlite_triggers(table: str) -> dict[str, str]:
    """``{name: the trigger after "CREATE TRIGGER name"}``; a change of id marks both ids."""

    def trigger(event: str, row: str, when: str = "") -> str:
        mark = SQLITE_MARK.format(table=table, row=row)
        return f"AFTER {event} ON {table} FOR EACH ROW {when} BEGIN {mark} END"

    if table in WHOLE:
        return {op: trigger(op.upper(), "0") for op in ("insert", "update", "delete")}
    return {
        "insert": trigger("INSERT", "NEW.id"),
        "update": trigger("UPDATE", "NEW.id"),
        "update_old_id": trigger("UPDATE", "OLD.id", "WHEN OLD.id <> NEW.id"),
        "delete": trigger("DELETE", "OLD.id"),
    }


POSTGRES_FUNCTION = f"""
CREATE OR REPLACE FUNCTION gem_mark_change() RETURNS trigger AS $$
DECLARE
  changed bigint[];
  changed_id bigint;
BEGIN
  IF TG_ARGV[0] = 'whole' OR TG_OP = 'TRUNCATE' THEN
    changed := ARRAY[0::bigint];
  ELSIF TG_OP = 'INSERT' THEN
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
    INSERT INTO {TABLE} (source, row_id, seq)
    VALUES (TG_TABLE_NAME, changed_id, (SELECT coalesce(max(seq), 0) + 1 FROM {TABLE}))
    ON CONFLICT (source, row_id) DO UPDATE SET seq = excluded.seq;
  END LOOP;
  RETURN NULL;
END;
$$ LANGUAGE plpgsql
"""


def install(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    if vendor == "sqlite":
        for statement in SQLITE_CREATE:
            schema_editor.execute(statement)
        for table in (*BY_ROW, *WHOLE):
            for op, trigger in _sqlite_triggers(table).items():
                schema_editor.execute(f"CREATE TRIGGER {table}_mark_{op} {trigger}")
    elif vendor == "postgresql":
        schema_editor.execute(
            f"CREATE TABLE {TABLE} (source varchar(64) NOT NULL, row_id bigint NOT NULL, "
            "seq bigint NOT NULL, PRIMARY KEY (source, row_id))"
        )
        schema_editor.execute(f"CREATE INDEX {TABLE}_seq ON {TABLE} (seq)")
        schema_editor.execute(POSTGRES_FUNCTION, params=None)
        for table in (*BY_ROW, *WHOLE):
            kind = "whole" if table in WHOLE else "row"
            schema_editor.execute(
                f"CREATE TRIGGER {table}_mark_change AFTER INSERT OR UPDATE OR DELETE "
                f"ON {table} FOR EACH ROW EXECUTE FUNCTION gem_mark_change('{kind}')"
            )
            schema_editor.execute(
                f"CREATE TRIGGER {table}_mark_truncate AFTER TRUNCATE "
                f"ON {table} FOR EACH STATEMENT EXECUTE FUNCTION gem_mark_change('whole')"
            )
    else:
        raise RuntimeError(f"No Gem change triggers for the {vendor} backend")


def remove(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    if vendor == "sqlite":
        for table in (*BY_ROW, *WHOLE):
            for op in SQLITE_OPS:
                schema_editor.execute(f"DROP TRIGGER IF EXISTS {table}_mark_{op}")
    elif vendor == "postgresql":
        for table in (*BY_ROW, *WHOLE):
            schema_editor.execute(f"DROP TRIGGER IF EXISTS {table}_mark_change ON {table}")
            schema_editor.execute(f"DROP TRIGGER IF EXISTS {table}_mark_truncate ON {table}")
        schema_editor.execute("DROP FUNCTION IF EXISTS gem_mark_change()")
    schema_editor.execute(f"DROP TABLE IF EXISTS {TABLE}")


class Migration(migrations.Migration):
    dependencies = [("gem", "0006_working_memory_importance_valence")]

    operations = [
        migrations.RunPython(install, remove, hints={"model_name": "workingmemory"}),
    ]
