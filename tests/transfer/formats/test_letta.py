import hashlib
import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.transfer.test_limits import nested
from transfer.bundle import BridgeError, LoreEntry, Memory, Message, WakePart
from transfer.formats.letta import letta_read
from transfer.limits import DEPTH_PROBLEM

pytestmark = pytest.mark.store_free

FIXTURES = Path(__file__).parent.parent / "fixtures" / "bridges"
OLDER = (FIXTURES / "letta_older.af").read_bytes()
CURRENT = (FIXTURES / "letta_current.af").read_bytes()


def digest(line: str) -> str:
    return hashlib.sha256(line.encode()).hexdigest()[:16]


def refusal(document) -> list[str]:
    with pytest.raises(BridgeError) as refused:
        letta_read(json.dumps(document).encode(), zone="UTC")
    return str(refused.value).splitlines()


def test_it_reads_an_older_agent_file():
    agent = letta_read(OLDER, zone="Europe/Paris")

    assert (agent.format, agent.name) == ("letta", "sam")
    assert agent.wake == [WakePart("Persona", "I am Sam.\nMy voice is soft.")]
    assert agent.entries == [
        LoreEntry(
            name="projects",
            keys=("projects",),
            secondary_keys=(),
            content="Building a boat.",
            constant=True,
            enabled=True,
            where="core_memory[2]",
            kept={"limit": 2000, "description": "What the user is working on"},
        )
    ]
    updated = datetime(2025, 4, 2, 10, 0, tzinfo=UTC)
    assert agent.memories == [
        Memory(
            origin=f"letta:sam:human:{digest('First name: Chad')}",
            text="First name: Chad",
            at=updated,
            kept={"block": "core_memory[1]", "line": 1},
        ),
        Memory(
            origin=f"letta:sam:human:{digest('Likes sailing')}",
            text="Likes sailing",
            at=updated,
            kept={"block": "core_memory[1]", "line": 2},
        ),
        Memory(
            origin=f"letta:sam:human:{digest('Studies at Berkeley')}",
            text="Studies at Berkeley",
            at=updated,
            kept={"block": "core_memory[1]", "line": 3},
        ),
    ]
    sent = json.loads(OLDER)["messages"][3]
    assert agent.messages == [
        Message(
            origin="letta:sam:2",
            speaker="user",
            is_user=True,
            text="hi, I'm Chad",
            at=datetime(2025, 4, 1, 3, 48, tzinfo=UTC),
            kept={
                "content": json.loads(OLDER)["messages"][2]["content"],
                "tool_calls": [],
            },
        ),
        Message(
            origin="letta:sam:3",
            speaker="sam",
            is_user=False,
            text="Hello Chad! Nice to meet you.",
            at=datetime(2025, 4, 1, 3, 48, 2, tzinfo=UTC),
            kept={
                "content": sent["content"],
                "name": None,
                "model": "gpt-4o-mini",
                "tool_calls": sent["tool_calls"],
            },
        ),
        Message(
            origin="letta:sam:7",
            speaker="user",
            is_user=True,
            text="Plain text, no wrapper.",
            at=datetime(2025, 4, 1, 3, 49, tzinfo=UTC),
        ),
    ]
    assert agent.skipped == [
        "1 system message",
        "1 login notice",
        "1 tool result",
        "1 tool call",
        "1 heartbeat",
    ]
    assert agent.kept["system"].startswith("You are Sam")
    assert [tool["name"] for tool in agent.kept["tools"]] == ["send_message", "core_memory_append"]
    assert agent.kept["llm_config"] == {"model": "gpt-4o-mini", "context_window": 32000}
    assert "core_memory" not in agent.kept and "messages" not in agent.kept


def test_it_reads_a_current_agent_file_with_two_agents():
    agents = letta_read(CURRENT, zone="UTC")

    assert agents.name == "Sam"
    assert agents.wake == [WakePart("Persona", "I am Sam, keeper of the lamp.")]
    assert agents.entries == [
        LoreEntry(
            name="places",
            keys=("places",),
            secondary_keys=(),
            content="The pier, the ferry, the lamp room.",
            constant=True,
            enabled=True,
            where="blocks[2]",
            kept={
                "limit": 5000,
                "description": "Places she mentions",
                "metadata": {},
                "id": "block-2",
            },
        )
    ]
    assert [(m.origin, m.text, m.at) for m in agents.memories] == [
        (f"letta:agent-0:human:{digest('First name: Nell')}", "First name: Nell", None),
        (
            f"letta:agent-0:human:{digest('Lives by the harbour')}",
            "Lives by the harbour",
            None,
        ),
    ]
    assert [(m.origin, m.speaker, m.is_user, m.text, m.at) for m in agents.messages] == [
        (
            "letta:message-1",
            "Nell",
            True,
            "The lighthouse is dark again.",
            datetime(2025, 10, 31, 22, 57, 10, tzinfo=UTC),
        ),
        (
            "letta:message-2",
            "Sam",
            False,
            "Then we light it together.",
            datetime(2025, 10, 31, 22, 57, 12, tzinfo=UTC),
        ),
        (
            "letta:message-3",
            "Keeper",
            False,
            "Oil delivered.",
            datetime(2025, 11, 1, 8, 0, tzinfo=UTC),
        ),
    ]
    # Its reasoning is no text said, and stays with the message.
    assert agents.messages[1].kept["content"][0] == {
        "type": "reasoning",
        "reasoning": "She is worried.",
    }
    assert "content" not in agents.messages[0].kept
    assert agents.skipped == ["1 system message"]
    assert agents.kept["metadata"] == {"revision_id": "abc123"}
    assert agents.kept["tools"] == [
        {"id": "tool-0", "name": "conversation_search", "tool_type": "letta_core"}
    ]
    assert [agent["name"] for agent in agents.kept["agents"]] == ["Sam", "Keeper"]
    assert agents.kept["agents"][0]["system"] == "You are a helpful self-improving agent."
    assert "messages" not in agents.kept["agents"][0]


def test_it_reads_a_file_encoded_twice():
    twice = json.dumps(CURRENT.decode()).encode()

    assert letta_read(twice, zone="UTC") == letta_read(CURRENT, zone="UTC")


def test_it_refuses_a_malformed_agent_file_whole_naming_each_field():
    document = json.loads(CURRENT)
    agent = document["agents"][0]
    agent["block_ids"].append("block-9")
    agent["messages"][1]["created_at"] = "someday"
    agent["messages"][2]["content"] = 5
    agent["messages"].append({"role": "user", "content": "no time"})
    document["agents"][1]["name"] = None
    document["blocks"][2]["value"] = "a \u0000 in it"
    document["blocks"].append({"value": "no label"})

    assert refusal(document) == [
        "agents[0].block_ids[3]: no block “block-9” in blocks",
        "agents[0].messages[1].created_at: not a time ('someday')",
        "agents[0].messages[2].content: must be a text or a list, not a number",
        "agents[0].messages[3].created_at: missing",
        "agents[1].name: missing",
        "blocks[2].value: holds a NUL character (\\x00), which PostgreSQL cannot store",
        "blocks[3].label: missing",
    ]


def test_it_refuses_a_send_message_call_without_its_message():
    document = json.loads(OLDER)
    document["messages"][3]["tool_calls"][0]["function"]["arguments"] = "{not json"

    assert refusal(document) == [
        "messages[3].tool_calls[0].function.arguments: not JSON",
    ]


def test_it_refuses_an_agent_file_nested_past_the_limit():
    document = json.loads(OLDER)
    document["llm_config"] = nested(100)
    calling = json.loads(OLDER)
    deepest = "[" * 10_000 + "]" * 10_000
    calling["messages"][3]["tool_calls"][0]["function"]["arguments"] = deepest

    assert refusal(document) == [DEPTH_PROBLEM]
    assert refusal(calling) == [f"messages[3].tool_calls[0].function.arguments: {DEPTH_PROBLEM}"]


def test_it_reads_a_user_message_of_deeply_nested_json_as_its_text():
    document = json.loads(OLDER)
    user = next(said for said in document["messages"] if said["role"] == "user")
    user["content"] = '{"type": ' + "[" * 10_000 + "]" * 10_000 + "}"

    agent = letta_read(json.dumps(document).encode(), zone="UTC")

    assert user["content"] in [message.text for message in agent.messages]


@pytest.mark.parametrize(
    ("data", "said"),
    [
        (b'{"agents": [}', "line 1, column 13: not JSON"),
        (b'"{\\"agents\\": [}"', "the JSON text the file holds: line 1, column 13: not JSON"),
        (b'{"name": "sam"}', "not a Letta agent file (neither an agents list nor core_memory)"),
        (b'{"agents": {}}', "agents: must be a list, not an object"),
        (b"[]", "not a Letta agent file: it holds a list, not an object"),
    ],
)
def test_it_refuses_what_is_no_agent_file(data, said):
    with pytest.raises(BridgeError) as refused:
        letta_read(data, zone="UTC")

    assert str(refused.value).startswith(said)
