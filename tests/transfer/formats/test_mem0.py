import json
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest

from tests.transfer.test_limits import nested
from transfer.bundle import BridgeError, Memory
from transfer.formats.mem0 import mem0_read
from transfer.limits import DEPTH_PROBLEM

pytestmark = pytest.mark.store_free

FIXTURES = Path(__file__).parent.parent / "fixtures" / "bridges"
PACIFIC = timezone(timedelta(hours=-7))


def refusal(document) -> list[str]:
    with pytest.raises(BridgeError) as refused:
        mem0_read(json.dumps(document).encode(), zone="UTC")
    return str(refused.value).splitlines()


def test_it_reads_a_list_of_memories():
    memories = mem0_read((FIXTURES / "mem0_list.json").read_bytes(), zone="Europe/Paris")

    assert (memories.format, memories.name, memories.kept) == ("mem0", "", {})
    assert memories.memories == [
        Memory(
            origin="mem0:892db2ae-06d9-49e5-8b3e-585ef9b85b8e",
            text="Name is Nell",
            at=datetime(2024, 7, 26, 10, 29, 36, 630547, tzinfo=PACIFIC),
            kept={"hash": "0d1b4b5c", "metadata": None, "updated_at": None, "user_id": "nell"},
        ),
        Memory(
            origin="mem0:8d268d0f-5452-4714-b27d-ae46f676a49d",
            text="Is afraid of the dark pier",
            at=datetime(2024, 7, 26, 8, 30, 13, tzinfo=UTC),
            kept={
                "hash": "3a0c1f2e",
                "metadata": {"category": "fears"},
                "updated_at": "2024-07-27T09:00:00-07:00",
                "user_id": "nell",
                "agent_id": "sam",
            },
        ),
    ]


def test_it_reads_memories_under_results_beside_relations():
    memories = mem0_read((FIXTURES / "mem0_results.json").read_bytes(), zone="UTC")

    assert memories.memories == [
        Memory(
            origin="mem0:5f4b9c1e-0d2c-4c1b-9a7e-1f2e3d4c5b6a",
            text="Prefers tea to coffee",
            at=datetime(2025, 1, 5, 8, 0, tzinfo=UTC),
            kept={
                "hash": "aa11",
                "metadata": {},
                "updated_at": None,
                "user_id": "nell",
                "score": 0.91,
            },
        )
    ]
    assert memories.kept == {
        "relations": [{"source": "nell", "relationship": "likes", "target": "tea"}]
    }


def test_it_reads_a_memory_without_a_time():
    memories = mem0_read(b'[{"id": "m1", "memory": "Likes boats"}]', zone="UTC")

    assert memories.memories == [Memory(origin="mem0:m1", text="Likes boats", at=None)]


def test_it_refuses_malformed_memories_whole_naming_each_field():
    assert refusal(
        {
            "results": [
                {"id": "a", "memory": "Fine."},
                {"id": "a", "memory": "Same id."},
                {"memory": "No id."},
                {"id": "b", "memory": 3, "created_at": "someday"},
                {"id": "c"},
                "a text",
                {"id": "d", "memory": "x", "metadata": {"\u0000": 1}},
            ]
        }
    ) == [
        "results[1].id: “a” is already results[0]",
        "results[2].id: missing",
        "results[3].memory: must be a text, not a number",
        "results[3].created_at: not a time ('someday')",
        "results[4].memory: missing",
        "results[5]: must be an object, not a text",
        "results[6].metadata: holds a NUL character (\\x00), which PostgreSQL cannot store",
    ]


@pytest.mark.parametrize(
    ("data", "said"),
    [
        (b'{"results": 3}', "not a mem0 export: it holds an object, not a list of memories"),
        (b'{"memories": []}', "not a mem0 export: it holds an object"),
        (b"[{]", "line 1, column 3: not JSON"),
    ],
)
def test_it_refuses_what_is_no_mem0_export(data, said):
    with pytest.raises(BridgeError) as refused:
        mem0_read(data, zone="UTC")

    assert str(refused.value).startswith(said)


def test_it_refuses_memories_nested_past_the_limit():
    memories = json.loads((FIXTURES / "mem0_list.json").read_bytes())
    memories[0]["metadata"] = nested(100)

    assert refusal(memories) == [DEPTH_PROBLEM]
