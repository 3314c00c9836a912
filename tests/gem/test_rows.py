import json
from datetime import UTC, datetime

import pytest

from gem.models import Fragment, WorkingMemory, WorkingMemorySource
from gem.rows import ROW_FIELDS, RowError, working_memory_from_row, working_memory_row
from gem.services import working_memory_create

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)


def test_an_item_written_out_and_read_back_is_the_same_item():
    Fragment.objects.create(key="physio")
    twin = working_memory_create(
        type="plan", content="call the physio on friday", actor="luna", at=NOW, turn=3, event_id=7
    ).item
    item = working_memory_create(
        type="plan", content="call the physio friday at noon", actor="luna", at=NOW, turn=4
    ).item
    WorkingMemorySource.objects.create(wm=item, event_id=7)
    rows = [json.loads(json.dumps(working_memory_row(each))) for each in (twin, item)]
    assert tuple(rows[1]) == ROW_FIELDS and rows[1]["near_duplicate_of"] == twin.pk
    WorkingMemory.objects.all().delete()

    for row in rows:
        working_memory_from_row(row)

    again = [working_memory_row(each) for each in WorkingMemory.objects.order_by("pk")]
    assert again == rows and again[1]["fragments"] == ["physio"] and again[1]["sources"] == [7]
    assert working_memory_from_row(rows[0]).existed


def test_a_row_missing_a_field_or_with_a_bare_time_is_refused():
    row = {name: None for name in ROW_FIELDS} | {"type": "pin", "content": "x", "subject": ""}
    with pytest.raises(RowError, match="missing fields: "):
        working_memory_from_row({"type": "pin"})
    with pytest.raises(RowError, match=r"missing field: content$"):
        working_memory_from_row({name: value for name, value in row.items() if name != "content"})
    with pytest.raises(
        RowError,
        match="created_at: “2026-01-01T00:00:00” is not an ISO 8601 time with a time zone offset",
    ):
        working_memory_from_row(row | {"created_at": "2026-01-01T00:00:00"})
    assert not WorkingMemory.objects.exists()
