"""A conversation written straight into the event log, and a fake API that answers each pass."""

import re
from datetime import UTC, datetime, timedelta

import pytest

from bench.fakeapi import FakeReply
from events.models import Event

START = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
CLEAN_MODEL, COMPRESS_MODEL, SUMMARISE_MODEL = "test-clean", "test-compress", "test-summarise"
_LINE_RE = re.compile(r"^#\d+ ", re.MULTILINE)


class Log:
    """Turns written into the event log, one minute apart."""

    def __init__(self):
        self.clock = START

    def turn(self, said: str, reply: str, *, actor: str = "luna") -> tuple[Event, Event]:
        user = Event.objects.create(
            ts=self.clock, actor=actor, content=f"<{actor}>{said}</{actor}>"
        )
        answer = Event.objects.create(
            ts=self.clock + timedelta(seconds=20), actor="claude", content=reply
        )
        self.clock += timedelta(minutes=1)
        return user, answer

    def turns(self, count: int, *, do_heavy: bool = False, start: int = 0) -> list[tuple]:
        made = []
        for n in range(start, start + count):
            if do_heavy:
                reply = (
                    f"<say>yes {n}</say><do>she pulls the blanket over both of them, slowly, "
                    f"and the room goes quiet around the two of them; the rain keeps on against "
                    f"the window and neither of them moves for a long while, {n}</do>"
                )
            else:
                reply = f"<say>I hear you about the garden, number {n}, and I am glad.</say>"
            made.append(self.turn(f"the garden again, number {n}", reply))
        return made


@pytest.fixture
def log(db):
    return Log()


def pass_of(body: dict) -> str:
    """Which Mirror pass a request to the fake API is: clean, compress, summarise or merge."""
    user = body["messages"][0]["content"]
    if body["model"] == CLEAN_MODEL:
        return "clean"
    if body["model"] == COMPRESS_MODEL:
        return "compress"
    return "merge" if "## Summaries to merge" in user else "summarise"


def section(body: dict, title: str) -> str:
    """The body of one ``## title`` section of a pass's user message ('' when absent)."""
    user = body["messages"][0]["content"]
    match = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## |\Z)", user, re.MULTILINE | re.DOTALL)
    return match[1].strip() if match else ""


def answer(body: dict) -> FakeReply:
    """A plausible answer per pass: the cleaner echoes the chunk, the others write the shapes."""
    kind = pass_of(body)
    if kind == "clean":
        return FakeReply(section(body, "Chunk"))
    if kind == "compress":
        return FakeReply(section(body, "Chunk, cleaned").replace("slowly, ", ""))
    if kind == "merge":
        count = len(re.findall(r"^### ", section(body, "Summaries to merge"), re.MULTILINE))
        return FakeReply(f"## Shape\nA merged stretch of {count}.\n## Notes\n- it went on")
    lines = _LINE_RE.findall(section(body, "Chunk, cleaned"))
    return FakeReply(
        f"## Shape\nA calm stretch of {len(lines)} lines.\n## Notes\n- the garden came up\n"
        "## Suggestions\n- pin: luna waters the garden every morning\n"
        "- desc (garden): roses along the fence\n- thought: the garden matters"
    )


@pytest.fixture
def mirror_api(fake_api, settings):
    """The fake Messages API answering every Mirror pass, with one model name per pass role."""
    settings.MIRROR_CLEAN_MODEL = CLEAN_MODEL
    settings.MIRROR_COMPRESS_MODEL = COMPRESS_MODEL
    settings.MIRROR_SUMMARISE_MODEL = SUMMARISE_MODEL
    settings.MIRROR_CHUNK_TURNS = 20
    settings.MIRROR_CONTEXT_TURNS = 5
    settings.MIRROR_SUGGESTION_CAP = 2
    fake_api.responder = answer
    return fake_api
