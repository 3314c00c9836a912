"""The event log's move from the Heart to its own app, and the turns' shape that holds several
replies to one message, on an installation made before them."""

import json

import pytest

from tests.heart.test_worker import SQLITE_ONLY

pytestmark = pytest.mark.store_free  # its own SQLite stores, whatever the suite runs on

STORES = ("default", "events", "summaries", "snapshots")
BEFORE_THE_MOVE = """
import json
from django.contrib.admin.models import CHANGE, LogEntry
from django.contrib.auth import get_user_model
from django.contrib.contenttypes.models import ContentType
from gem.services import working_memory_create
from django.db import connections
from django.utils import timezone
from mirror.models import Summary
now = timezone.now()
with connections["events"].cursor() as cursor:  # the tables as they were then
    cursor.execute(
        "INSERT INTO heart_event (ts, content, actor, image) VALUES (%s, %s, 'luna', '')",
        [now, "<luna><pin>tea at four</pin> the rain again</luna>"],
    )
    event_id = cursor.lastrowid
    cursor.executemany(
        "INSERT INTO heart_eventtag (event_id, tag) VALUES (%s, %s)",
        [(event_id, "luna"), (event_id, "pin")],
    )
    cursor.execute(
        "INSERT INTO heart_turn (event_id, status, number, partial_text, error, attempts, "
        "model, queued_at) VALUES (%s, 'queued', 1, '', '', 0, '', %s)",
        [event_id, now],
    )
    turn_id = cursor.lastrowid
with connections["snapshots"].cursor() as cursor:
    cursor.execute(
        "INSERT INTO heart_contextsnapshot (turn, ts, assembled_system, assembled_user, "
        "token_counts, items_included) VALUES (%s, %s, 's', 'u', '{}', '{}')",
        [turn_id, now],
    )
Summary.objects.create(level="L0", first_event_id=event_id, last_event_id=event_id,
                       content="The rain.")
working_memory_create(type="pin", content="tea at four", actor="luna", at=now, turn=1)
working_memory_create(type="thought", content="the rain again", actor="claude", at=now, turn=1)
owner = get_user_model().objects.create_user("owner")
LogEntry.objects.create(user=owner, action_flag=CHANGE, object_id=str(event_id),
                        object_repr="event", change_message="looked at",
                        content_type=ContentType.objects.get(app_label="heart", model="event"))
print(json.dumps({"event": event_id, "turn": turn_id}))
"""
AFTER_THE_MOVE = """
import json
from django.contrib.admin.models import LogEntry
from django.contrib.contenttypes.models import ContentType
from events.models import Event, EventTag, Turn
from gem.models import WorkingMemory
from heart.models import ContextSnapshot
from mirror.models import Summary
entry = LogEntry.objects.get()
print(json.dumps({
    "events": list(Event.objects.values_list("pk", "content")),
    "tags": sorted(EventTag.objects.values_list("tag", flat=True)),
    "turns": list(Turn.objects.values_list("pk", "event_id", "again_of_id")),
    "snapshots": ContextSnapshot.objects.count(),
    "summaries": Summary.objects.count(),
    "working_memory": sorted(WorkingMemory.objects.values_list("content", flat=True)),
    "logged": [entry.content_type.app_label, entry.get_edited_object().pk],
    "heart_types": sorted(ContentType.objects.filter(
        app_label="heart").values_list("model", flat=True)),
}))
"""


MIGRATED = "\n".join(
    f"call_command('migrate', {{target}}database={store!r}, verbosity=0)" for store in STORES
)
# One process for the whole story (a process per step took three times as long), on copies of
# the stores the run migrated once: taken back to before the event log moved, filled, then
# migrated again.
STORY = "\n".join(
    [
        "from django.core.management import call_command",
        MIGRATED.format(target="'events', 'zero', "),
        "exec(BEFORE_THE_MOVE)",
        MIGRATED.format(target=""),
        "exec(AFTER_THE_MOVE)",
    ]
)


def test_an_installation_made_before_the_move_keeps_every_row(manage, tmp_path, sqlite_stores_copy):
    sqlite_stores_copy(tmp_path / "data")
    told = manage(
        "shell",
        "--no-imports",
        "-c",
        f"BEFORE_THE_MOVE = {BEFORE_THE_MOVE!r}\nAFTER_THE_MOVE = {AFTER_THE_MOVE!r}\n{STORY}",
        env=SQLITE_ONLY,
    )
    assert told.returncode == 0, told.stderr
    made, read = told.stdout.strip().splitlines()[-2:]
    ids, rows = json.loads(made), json.loads(read)

    assert rows["events"] == [[ids["event"], "<luna><pin>tea at four</pin> the rain again</luna>"]]
    assert rows["tags"] == ["luna", "pin"]
    assert rows["turns"] == [[ids["turn"], ids["event"], None]]  # one reply asked for, as before
    assert (rows["snapshots"], rows["summaries"]) == (1, 1)
    assert rows["working_memory"] == ["tea at four", "the rain again"]
    # The admin log's entry follows its event into the new app.
    assert rows["logged"] == ["events", ids["event"]]
    # The event log's models left the Heart: what it keeps is its own.
    assert "contextsnapshot" in rows["heart_types"]
    assert not {"event", "eventtag", "turn"} & set(rows["heart_types"])
