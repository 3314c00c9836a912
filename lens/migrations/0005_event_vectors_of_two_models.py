"""An event's row now holds the vectors of two models side by side (all-MiniLM-L6-v2, then
multilingual-e5-small: ``lens.semantic.event_vectors``). Rows of one model are removed: they are
made from the log, which stays as it was. The task after each turn writes the newest again;
``manage.py search_vectors`` writes the rest, with progress."""

from django.db import migrations

from silentstar.migration_sql import by_vendor

CLEAR = ["DELETE FROM lens_event_vector"]


class Migration(migrations.Migration):
    dependencies = [("lens", "0004_event_vectors_with_exchange")]

    operations = [
        migrations.RunPython(
            by_vendor({"sqlite": CLEAR, "postgresql": CLEAR}, what="event vectors"),
            migrations.RunPython.noop,
            hints={"store": "events"},
        ),
    ]
