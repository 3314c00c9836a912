from django.db import migrations, models


class AddConstraintInPlace(migrations.AddConstraint):
    """``AddConstraint`` that never rebuilds the table on SQLite.

    SQLite's schema editor adds a unique constraint by copying the table, which drops the
    triggers on it (the Gem's change marks and the Lens's search index); a unique index, made
    in place, is what the constraint is there.
    """

    def database_forwards(self, app_label, schema_editor, from_state, to_state):
        if schema_editor.connection.vendor != "sqlite":
            return super().database_forwards(app_label, schema_editor, from_state, to_state)
        model = to_state.apps.get_model(app_label, self.model_name)
        if self.allow_migrate_model(schema_editor.connection.alias, model):
            schema_editor.execute(self.constraint.create_sql(model, schema_editor))
        return None

    def database_backwards(self, app_label, schema_editor, from_state, to_state):
        if schema_editor.connection.vendor != "sqlite":
            return super().database_backwards(app_label, schema_editor, from_state, to_state)
        model = to_state.apps.get_model(app_label, self.model_name)
        if self.allow_migrate_model(schema_editor.connection.alias, model):
            schema_editor.execute(self.constraint.remove_sql(model, schema_editor))
        return None


class Migration(migrations.Migration):
    dependencies = [
        ("gem", "0016_fragment_case_twins"),
    ]

    operations = [
        AddConstraintInPlace(
            model_name="fragment",
            constraint=models.UniqueConstraint(
                fields=("key_folded",),
                name="gem_fragment_unique_key_folded",
                violation_error_message="A fragment of that key but for case is already here.",
            ),
        ),
    ]
