"""Database triggers that refuse UPDATE and DELETE on the event log, whatever issues them."""

from django.db import migrations

TABLES = ("heart_event", "heart_eventtag")

SQLITE_CREATE = [
    "CREATE TRIGGER {table}_no_update BEFORE UPDATE ON {table} "
    "BEGIN SELECT RAISE(ABORT, '{table} is append-only: UPDATE refused'); END",
    "CREATE TRIGGER {table}_no_delete BEFORE DELETE ON {table} "
    "BEGIN SELECT RAISE(ABORT, '{table} is append-only: DELETE refused'); END",
]
SQLITE_DROP = [
    "DROP TRIGGER IF EXISTS {table}_no_update",
    "DROP TRIGGER IF EXISTS {table}_no_delete",
]

POSTGRES_FUNCTION = """
CREATE OR REPLACE FUNCTION silentstar_refuse_change() RETURNS trigger AS $$
BEGIN
  RAISE EXCEPTION '% is append-only: % refused', TG_TABLE_NAME, TG_OP
    USING ERRCODE = 'restrict_violation';
END;
$$ LANGUAGE plpgsql
"""
POSTGRES_CREATE = [
    "CREATE TRIGGER {table}_append_only BEFORE UPDATE OR DELETE ON {table} "
    "FOR EACH ROW EXECUTE FUNCTION silentstar_refuse_change()",
    "CREATE TRIGGER {table}_no_truncate BEFORE TRUNCATE ON {table} "
    "FOR EACH STATEMENT EXECUTE FUNCTION silentstar_refuse_change()",
]
POSTGRES_DROP = [
    "DROP TRIGGER IF EXISTS {table}_append_only ON {table}",
    "DROP TRIGGER IF EXISTS {table}_no_truncate ON {table}",
]


def _execute_for_each_table(schema_editor, statements):
    for table in TABLES:
        for statement in statements:
            schema_editor.execute(statement.format(table=table))


def install(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    if vendor == "sqlite":
        _execute_for_each_table(schema_editor, SQLITE_CREATE)
    elif vendor == "postgresql":
        schema_editor.execute(POSTGRES_FUNCTION, params=None)
        _execute_for_each_table(schema_editor, POSTGRES_CREATE)
    else:
        raise RuntimeError(f"No append-only triggers for the {vendor} backend")


def remove(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    if vendor == "sqlite":
        _execute_for_each_table(schema_editor, SQLITE_DROP)
    elif vendor == "postgresql":
        _execute_for_each_table(schema_editor, POSTGRES_DROP)
        schema_editor.execute("DROP FUNCTION IF EXISTS silentstar_refuse_change()")


class Migration(migrations.Migration):
    dependencies = [("heart", "0001_initial")]

    operations = [
        migrations.RunPython(install, remove, hints={"model_name": "event"}),
    ]
