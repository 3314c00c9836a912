"""An event's vector is now the mean of the turn's own vector and those of the exchanges it is
in (``lens.semantic.event_vectors``). Vectors of the old kind are removed: they are made from the
log, which stays as it was, and the rankings would mix two kinds. The task after each turn
writes the newest again; ``manage.py search_vectors`` writes the rest, with progress."""

from django.db import migrations

from silentstar.migration_sql import by_vendor

CLEAR = ["DELETE FROM lens_event_vector"]


class Migration(migrations.Migration):
    dependencies = [("lens", "0003_event_vectors")]

    operations = [
        migrations.RunPython(
            by_vendor({"sqlite": CLEAR, "postgresql": CLEAR}, what="event vectors"),
            migrations.RunPython.noop,
            hints={"store": "events"},
        ),
    ]
