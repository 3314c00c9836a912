"""The event index written again where a correction changed what it holds.

An event's row holds its text, its speaker and, as context, the text of the two events before
it (lens 0001), all read from the log as corrected (``lens_event_corrected``, lens 0009): a
correction changes the corrected event's own row and the rows of the two events after it.
The semantic search's vector of an event is made with the turns before and after it
(``lens.semantic``): the vectors of the event and of its two neighbours are removed, and
written again from the corrected log by ``lens.tasks.vectors_fill_range_task``.
"""

from django.db import connections

from silentstar.router import store_for

CONTEXT = (
    "coalesce((SELECT group_concat(content, ' ') FROM (SELECT content FROM lens_event_corrected "
    "WHERE id < %s ORDER BY id DESC LIMIT 2)), '')"
)


def event_rows_rewritten(event_id: int) -> tuple[int, int]:
    """Write again the index rows that hold what ``event_id`` says, and remove the vectors
    made with it; the first and last events whose vectors are to be written again."""
    connection = connections[store_for("heart", "event")]
    with connection.cursor() as cursor:
        cursor.execute("SELECT id FROM heart_event WHERE id > %s ORDER BY id LIMIT 2", [event_id])
        ids = [event_id, *(row[0] for row in cursor.fetchall())]
        if connection.vendor == "sqlite":
            for row in ids:
                cursor.execute(
                    "UPDATE lens_event_fts SET "
                    "content = (SELECT content FROM lens_event_corrected WHERE id = %s), "
                    "speaker = (SELECT actor FROM lens_event_corrected WHERE id = %s), "
                    f"context = {CONTEXT} WHERE rowid = %s",
                    [row, row, row, row],
                )
        else:
            cursor.execute(
                "UPDATE lens_event_index i SET document = "
                "lens_event_document(v.content, v.actor, v.ts, lens_event_before(v.id)) "
                "FROM lens_event_corrected v WHERE v.id = i.event_id AND i.event_id = ANY(%s)",
                [ids],
            )
        cursor.execute("SELECT max(id) FROM heart_event WHERE id < %s", [event_id])
        (before,) = cursor.fetchone()
        around = (before or event_id, ids[1] if len(ids) > 1 else event_id)
        cursor.execute(
            "DELETE FROM lens_event_vector WHERE event_id BETWEEN %s AND %s", list(around)
        )
    return around
