"""An event's row holds one model's vector again (all-MiniLM-L6-v2: multilingual-e5-small ran
on an engine built for one platform, and without it the search finds as much on real
conversations). Rows of two models are removed: they are made from the log, which stays as it
was. The task after each turn writes the newest again; ``manage.py search_vectors`` writes the
rest, with progress."""

from django.db import migrations

from silentstar.migration_sql import by_vendor

CLEAR = ["DELETE FROM lens_event_vector"]


class Migration(migrations.Migration):
    dependencies = [("lens", "0006_event_vector_written")]

    operations = [
        migrations.RunPython(
            by_vendor({"sqlite": CLEAR, "postgresql": CLEAR}, what="event vectors"),
            migrations.RunPython.noop,
            hints={"store": "events"},
        ),
    ]
