"""The corrected log's view leaves out, as it does a retracted event, a reply set aside for
another reply to the same message (``events`` 0005)."""

import importlib

from django.db import migrations

from silentstar.migration_sql import by_vendor

_corrected = importlib.import_module("lens.migrations.0009_event_corrected")
OUT = _corrected._latest("'retraction', 'restoration', 'aside', 'chosen'", "kind")
VIEW = (
    "SELECT e.id, e.ts, "
    f"CASE WHEN {OUT} IN ('retraction', 'aside') THEN '' "
    f"ELSE coalesce({_corrected.EDITED}, e.content) END "
    f"AS content, coalesce({_corrected.ATTRIBUTED}, e.actor) AS actor FROM heart_event e"
)
BEFORE = _corrected.VIEW.removeprefix("CREATE VIEW lens_event_corrected AS ")

FORWARD = {
    "sqlite": ["DROP VIEW lens_event_corrected", f"CREATE VIEW lens_event_corrected AS {VIEW}"],
    "postgresql": [f"CREATE OR REPLACE VIEW lens_event_corrected AS {VIEW}"],
}
BACKWARD = {
    "sqlite": ["DROP VIEW lens_event_corrected", f"CREATE VIEW lens_event_corrected AS {BEFORE}"],
    "postgresql": [f"CREATE OR REPLACE VIEW lens_event_corrected AS {BEFORE}"],
}


class Migration(migrations.Migration):
    dependencies = [
        ("lens", "0009_event_corrected"),
        ("events", "0005_replies_set_aside"),
    ]

    operations = [
        migrations.RunPython(
            by_vendor(FORWARD, what="the corrected log's view"),
            by_vendor(BACKWARD, what="the corrected log's view"),
            hints={"store": "events"},
        ),
    ]
