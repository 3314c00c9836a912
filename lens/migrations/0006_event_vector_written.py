"""Each vector row carries ``written``: a random number drawn anew at every write of the row
(``lens.semantic.vectors_fill``). A process keeps a copy of the vectors it has read and, at
each search, reads the window's ids and ``written`` alone (the index below holds both, so no
vector is read for them); a vector is read again only when its number is not the copy's. A
number drawn at random, rather than counted, stays right across a write rolled back and an id
used again: the new row's number is not the old one's. Rows from before have 0, read once."""

from django.db import migrations

from silentstar.migration_sql import by_vendor

SQLITE = [
    "ALTER TABLE lens_event_vector ADD COLUMN written INTEGER NOT NULL DEFAULT 0",
    "CREATE INDEX lens_event_vector_written ON lens_event_vector (event_id, written)",
]
SQLITE_DROP = [
    "DROP INDEX IF EXISTS lens_event_vector_written",
    "ALTER TABLE lens_event_vector DROP COLUMN written",
]
POSTGRES = [
    "ALTER TABLE lens_event_vector ADD COLUMN written bigint NOT NULL DEFAULT 0",
    "CREATE INDEX lens_event_vector_written ON lens_event_vector (event_id, written)",
]
POSTGRES_DROP = [
    "DROP INDEX IF EXISTS lens_event_vector_written",
    "ALTER TABLE lens_event_vector DROP COLUMN written",
]


class Migration(migrations.Migration):
    dependencies = [("lens", "0005_event_vectors_of_two_models")]

    operations = [
        migrations.RunPython(
            by_vendor({"sqlite": SQLITE, "postgresql": POSTGRES}, what="vector write marks"),
            by_vendor(
                {"sqlite": SQLITE_DROP, "postgresql": POSTGRES_DROP}, what="vector write marks"
            ),
            hints={"store": "events"},
        ),
    ]
