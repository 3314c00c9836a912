"""``python -m bench mirror``: compress a synthetic log of turns against the fake Messages API.

Runs inside throwaway SQLite stores (the command sets them up). The fake API
(``bench/fakeapi.py``) is started in this process and the real SDK talks to it over HTTP; it
answers each pass with text shaped like a real answer (the cleaner echoes the chunk, the
compressor shortens action lines, the summariser and the merger write the hybrid format), so
token counts and the number of passes are those of a real run; only the models' own thinking
time is missing. Every third stretch of twenty turns is heavy with action, so both routes run.
"""

import re
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from django.conf import settings

from bench.fakeapi import FakeMessagesAPI, FakeReply, online
from events.models import Event
from mirror.models import MirrorRun, Summary, TagSuggestion
from mirror.run import MANUAL, mirror_run

START = datetime(2026, 1, 5, 8, 0, tzinfo=UTC)
ACTION = (
    "<do>She sets the cup down and pulls the blanket over both of them; the rain keeps on "
    "against the window, the lamp hums, and for a long while neither of them moves or speaks, "
    "only the slow rise and fall of breathing, {n}.</do>"
)
_LINE_RE = re.compile(r"^(#\S+ \S+ \((?:do|narrate)\): )(.*)$", re.MULTILINE)


def synthetic_log_build(*, turns: int) -> None:
    """``turns`` turns of the person and the companion, one every three minutes."""
    rows = []
    for n in range(turns):
        ts = START + timedelta(minutes=3 * n)
        heavy = (n // 20) % 3 == 2
        said = (
            f"<luna>turn {n}: the garden, the letter from the council, and whether to call</luna>"
        )
        reply = f"<say>I hear you about the garden and the letter, {n}. Call tomorrow.</say>"
        if heavy:
            reply = f"<say>Come here, {n}.</say>" + ACTION.format(n=n) * 2
        rows.append(Event(ts=ts, actor="luna", content=said))
        rows.append(Event(ts=ts + timedelta(seconds=40), actor="claude", content=reply))
    Event.objects.bulk_create(rows, batch_size=500)


def fake_answer(body: dict):
    """The fake API's answer to one Mirror pass, by the model asked and the request's sections."""

    user = body["messages"][0]["content"]
    model = body["model"]
    chunk = user.rsplit("\n## ", 1)[-1].split("\n", 1)[-1]
    if model == settings.MIRROR_CLEAN_MODEL:
        return FakeReply(chunk, chunks=8)
    if model == settings.MIRROR_COMPRESS_MODEL:
        return FakeReply(_LINE_RE.sub(lambda m: m[1] + " ".join(m[2].split()[:8]), chunk), chunks=8)
    if "## Summaries to merge" in user:
        return FakeReply(
            "## Shape\nA long quiet stretch about the garden and the council's letter, growing "
            "calmer as it went.\n## Notes\n- the letter is still unanswered\n- tea before calls\n"
            "- evenings are for the two of them",
            chunks=8,
        )
    return FakeReply(
        "## Shape\nSteady and warm: the garden, then the letter, then a long quiet together.\n"
        "## Notes\n- luna worries about the council's letter; will call tomorrow\n"
        "- the roses by the fence need cutting back\n- the evening ended close and quiet\n"
        "## Suggestions\n- pin: luna calls the council tomorrow morning\n"
        "- desc (garden): roses along the fence, overgrown",
        chunks=8,
    )


def mirror_measure(*, turns: int, progress: Callable[[str], None]) -> dict:
    """Build the log, compress all of it in one forced run, and return the figures."""

    synthetic_log_build(turns=turns)
    progress(f"{turns:,} turns ({2 * turns:,} events) written; compressing...")
    with FakeMessagesAPI() as api, online(api):
        api.responder = fake_answer
        began = time.perf_counter()
        run = mirror_run(kind=MANUAL, force=True)
        seconds = time.perf_counter() - began
        requests = len(api.requests)
    if run is None or run.status != "done":
        raise RuntimeError(f"the Mirror run did not finish: {run and run.error}")
    levels = {level: Summary.objects.filter(level=level).count() for level in ("L0", "L1", "L2")}
    return {
        "turns": turns,
        "seconds": seconds,
        "requests": requests,
        "route_chunks": run.usage.get("chunks", {}),
        "passes": {role: u for role, u in run.usage.items() if role != "chunks"},
        "summaries": levels,
        "suggestions": TagSuggestion.objects.count(),
        "runs": MirrorRun.objects.count(),
    }
