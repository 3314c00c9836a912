"""manage.py cost, after real calls: a Heart turn and a Mirror run through the real SDK against
the fake Messages API, each reply's usage scripted, then compared with the ledger's rows and the
command's totals."""

import io
from dataclasses import replace

import pytest
from django.core.management import CommandError, call_command

from bench.fakeapi import FakeReply
from heart.services import turn_submit
from heart.tasks import run_turns_task
from ledger.models import ModelCall
from mirror.run import mirror_run
from silentstar.pricing import TOKEN_NAMES as TOKENS
from tests.mirror.conftest import Log, section

pytestmark = pytest.mark.django_db(databases="__all__")

HEART = FakeReply(
    "<say>I'm here.</say>",
    input_tokens=1200,
    output_tokens=40,
    cache_read_input_tokens=900,
    cache_creation_input_tokens=300,
    ephemeral_1h_input_tokens=100,
)
CLEAN = FakeReply(
    input_tokens=2000,
    output_tokens=500,
    cache_read_input_tokens=0,
    cache_creation_input_tokens=700,
)
SUMMARISE = FakeReply(
    "## Shape\nA calm stretch.\n## Notes\n- the garden came up",
    input_tokens=3000,
    output_tokens=800,
    cache_read_input_tokens=1500,
    cache_creation_input_tokens=0,
)


def usage_of(reply: FakeReply) -> dict[str, int]:
    """The usage the fake API reports for a scripted reply, as the ledger keeps it."""
    hour = reply.ephemeral_1h_input_tokens or 0
    return {
        "input_tokens": reply.input_tokens,
        "output_tokens": reply.output_tokens,
        "cache_read_tokens": reply.cache_read_input_tokens,
        "cache_write_5m_tokens": reply.cache_creation_input_tokens - hour,
        "cache_write_1h_tokens": hour,
        "web_searches": reply.web_searches,
    }


def cost(*args: str) -> str:
    out = io.StringIO()
    call_command("cost", *args, stdout=out)
    return out.getvalue()


@pytest.fixture
def conversation(fake_api, settings):
    """A Heart turn, then nineteen turns of dialogue and a Mirror run of their one chunk of
    twenty (clean, then summarise), each reply's usage as scripted here: the component and reply
    of each, in order."""
    settings.HEART_MODEL = "claude-opus-5-5"
    settings.MIRROR_CLEAN_MODEL = "claude-haiku-5-5"
    settings.MIRROR_SUMMARISE_MODEL = "claude-opus-5-5"
    served: list[tuple[str, FakeReply]] = [("heart", HEART)]
    fake_api.push(HEART)
    run_turns_task(turn_submit(text="<luna>are you there?</luna>", actor="luna", enqueue=False).pk)

    def answer(body: dict) -> FakeReply:
        if body["model"] == "claude-haiku-5-5":
            served.append(("mirror-clean", replace(CLEAN, text=section(body, "Chunk"))))
        else:
            served.append(("mirror-summarise", SUMMARISE))
        return served[-1][1]

    fake_api.responder = answer
    Log().turns(19)
    assert mirror_run(force=True).status == "done"
    assert [component for component, _ in served] == ["heart", "mirror-clean", "mirror-summarise"]
    return served


def test_the_ledger_holds_what_the_api_reported_for_every_call(conversation):
    rows = ModelCall.objects.order_by("ts", "pk")

    assert [row.component for row in rows] == [component for component, _ in conversation]
    assert [{name: getattr(row, name) for name in TOKENS} for row in rows] == [
        usage_of(reply) for _, reply in conversation
    ]
    assert not rows.filter(offline=True).exists()


def test_cost_prints_the_ledgers_totals_per_component_and_in_all(conversation):
    printed = cost("--days", "7")

    lines = {tuple(line.split()[:4]): line.split() for line in printed.splitlines()}
    total = lines[("all", "days", "all", "3")]
    sent = [usage_of(reply) for _, reply in conversation]
    assert total[4:10] == [f"{sum(usage[name] for usage in sent):,}" for name in TOKENS]
    # heart: 1,200 × $4 + 40 × $20 + 900 × $0.20 + 200 × $5 + 100 × $8 = $0.00758 (Opus 5.5)
    # clean: 2,000 × $0.10 + 500 × $0.50 + 700 × $0.125 = $0.0005375 (Haiku 5.5)
    # summarise: 3,000 × $4 + 800 × $20 + 1,500 × $0.20 = $0.0283, per million tokens
    assert total[10] == "$0.0364"
    assert lines[("all", "days", "heart", "1")][10] == "$0.0076"
    cache_read = 900 + 1500
    sent_tokens = 1200 + 900 + 300 + 2000 + 700 + 3000 + 1500
    assert total[11] == f"{cache_read / sent_tokens:.1%}"
    assert f"Total: $0.0364, for 3 calls. Cache-read share: {total[11]}" in printed


def test_an_offline_turn_and_mirror_run_are_recorded_as_offline_and_free(settings):
    settings.COMPANION_OFFLINE = True
    run_turns_task(turn_submit(text="<luna>hello</luna>", actor="luna", enqueue=False).pk)
    Log().turns(20)
    mirror_run(force=True)

    rows = ModelCall.objects.all()
    assert {row.component for row in rows} >= {"heart", "mirror-clean", "mirror-summarise"}
    assert all(row.offline and row.model == "offline" for row in rows)
    assert "Total: $0.0000, for" in cost()


def test_cost_says_when_there_were_no_calls_and_refuses_a_bad_number_of_days():
    assert "No calls in these days." in cost("--days", "1")
    with pytest.raises(CommandError, match="--days must be from 1 to 3660, got 0"):
        cost("--days", "0")
