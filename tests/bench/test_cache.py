"""``python -m bench cache``: a tiny conversation replayed against the prompt cache's rules."""

import json
import math
from datetime import timedelta

import anthropic
import pytest

from bench.cache import (
    GAP_SECONDS,
    PAUSE_MINUTES,
    PERSON,
    START,
    TAGGED,
    cache_replay,
    exchanges_of,
    script_of,
    shares,
)
from bench.cli import main
from events.models import Event
from gem.models import WorkingMemory
from heart.models import ContextSnapshot
from silentstar.pricing import PRICES, Tokens, cost, for_model

TURNS = 12
PLACES = ("the harbour", "the old bakery", "the tram stop", "the allotment", "the bookshop")


def conversation() -> dict:
    """Ana (the person) and Ben (the companion) in turn, one line each, but Ana's third message
    is two lines and Ben's last line has no message after it."""
    turns = []

    def say(speaker: str, text: str) -> None:
        turns.append(
            {"id": f"c1:D1:{len(turns) + 1}", "ts": "2024-03-04T20:00:00", "speaker": speaker}
            | {"text": text}
        )

    for n in range(TURNS):
        place = PLACES[n % len(PLACES)]
        say("Ana", f"Message {n}: I walked past {place} again, <b>tired</b> but fine")
        if n == 2:
            say("Ana", "And the ferry timetable changed, of all things.")
        say("Ben", f"Reply {n}: tell me more about {place}, what did it smell like?")
    say("Ana", "A last word nobody answers.")
    return {"id": "c1", "turns": turns}


@pytest.mark.store_free
def test_it_pairs_each_run_of_the_persons_lines_with_the_next_reply():
    exchanges, person, companion = exchanges_of(conversation())

    assert (person, companion, len(exchanges)) == ("Ana", "Ben", TURNS)
    assert exchanges[2].message.endswith(
        "but fine\nAnd the ferry timetable changed, of all things."
    )
    assert exchanges[0].reply == "Reply 0: tell me more about the harbour, what did it smell like?"


@pytest.mark.store_free
def test_its_script_is_the_seeds_gaps_a_few_long_pauses_and_tags_in_the_first_quarter():
    script = script_of(200, seed=3)

    assert script == script_of(200, seed=3) and script != script_of(200, seed=4)
    assert script.at[0] == START and len(script.at) == 200
    assert len(script.pauses) == 8
    (short_low, short_high), (away_low, away_high) = PAUSE_MINUTES
    breaks = 0
    for index in range(1, 200):
        gap = (script.at[index] - script.at[index - 1]).total_seconds()
        if index in script.pauses:
            assert (
                short_low * 60 <= gap <= short_high * 60 or away_low * 60 <= gap <= away_high * 60
            )
            breaks += gap <= short_high * 60
        else:
            assert GAP_SECONDS[0] <= gap <= GAP_SECONDS[1]
    assert 0 < breaks < 8  # short breaks and time away, both
    assert sorted(script.tags.values()) == sorted(TAGGED)
    assert all(index < 50 for index in script.tags)


@pytest.fixture
def small_recent(settings):
    """Pools small enough that the first messages leave Recent and the Mirror summarises."""
    settings.BUDGET_POOL_USER, settings.BUDGET_POOL_SAY = 120, 80
    settings.BUDGET_POOL_DO, settings.BUDGET_POOL_FLEX = 40, 60


@pytest.mark.django_db(databases="__all__")
def test_it_replays_through_the_turn_pipeline_and_its_figures_add_up(small_recent, settings):
    exchanges, _, _ = exchanges_of(conversation())
    moments = []

    def idle(moment):
        """Once, a call of its own to the fake, as something keeping the cache warm would."""
        moments.append(moment)
        if len(moments) == 1:
            with anthropic.Anthropic(api_key="bench", max_retries=0) as sdk:
                sdk.messages.create(model="claude-opus-5-5", max_tokens=5, messages=[_PING])

    result = cache_replay(exchanges=exchanges, minimum=1, seed=0, idle=idle)

    heart = result["heart"]
    assert heart["requests"] == TURNS
    assert result["idle"]["requests"] == 1
    events = list(Event.objects.order_by("pk").values_list("actor", "content", "ts"))
    assert len(events) == 2 * TURNS
    assert events[0][0] == PERSON and events[0][2] == START
    assert "< b>tired< /b> but fine" in events[0][1]  # no tag opened by the conversation's text
    assert (
        events[1][1]
        == "<say>Reply 0: tell me more about the harbour, what did it smell like?</say>"
    )
    # The hook ran at each whole minute between a reply and the next message.
    replies = [ts for actor, _, ts in events[1::2]]
    messages = [ts for actor, _, ts in events[2::2]]
    expected = [
        replied + timedelta(minutes=m)
        for replied, sent in zip(replies, messages, strict=False)
        for m in range(1, math.ceil((sent - replied).total_seconds() / 60))
    ]
    assert moments == expected and len(moments) >= TURNS - 1

    # Every input token is read, written or uncached: the prompts as sent, block by block.
    snapshots = ContextSnapshot.objects.order_by("turn")
    characters = [len(s.assembled_system) + len(s.assembled_user) for s in snapshots]
    whole = heart["read"] + heart["written_5m"] + heart["written_1h"] + heart["uncached"]
    least = sum(math.ceil(c / 4) for c in characters)
    assert least <= whole <= least + 8 * TURNS  # each block rounds up on its own
    assert heart["read"] > 0 and heart["written_5m"] + heart["written_1h"] > 0
    price = for_model(PRICES, settings.HEART_MODEL)
    assert heart["cost"] == pytest.approx(
        cost(
            price,
            Tokens(
                input_tokens=heart["uncached"],
                output_tokens=heart["output"],
                cache_read_tokens=heart["read"],
                cache_write_5m_tokens=heart["written_5m"],
                cache_write_1h_tokens=heart["written_1h"],
            ),
        )
    )
    assert heart["cost_uncached"] == pytest.approx(
        (whole * price.input + heart["output"] * price.output) / 1_000_000
    )
    row = shares(result)
    assert row["read_share"] + row["written_share"] + row["uncached_share"] == pytest.approx(1)
    assert row["input_per_turn"] == whole / TURNS
    assert row["cost_per_turn"] == pytest.approx((heart["cost"] + result["idle"]["cost"]) / TURNS)

    # The conversation ran past Recent into summaries, with the person's tags in Lingering.
    assert result["mirror_runs"] >= 1 and result["summaries"] >= 1
    assert result["turns_with_summaries"] >= 1
    assert result["turns_with_lingering"] >= 1
    assert WorkingMemory.objects.filter(type__in=["plan", "pin"]).count() == len(TAGGED)


_PING = {"role": "user", "content": "still there?"}


@pytest.mark.store_free
def test_the_command_replays_once_per_minimum_and_writes_its_figures(bench, tmp_path):
    dataset = tmp_path / "tiny.json"
    dataset.write_text(json.dumps({"conversations": [conversation()], "questions": []}))
    figures = tmp_path / "figures.json"

    done = bench(
        "cache",
        str(dataset),
        "--turns",
        "8",
        "--minimums",
        "1",
        "1000000",
        "--keep-warm",
        "off",
        "--json",
        str(figures),
    )

    assert done.returncode == 0, done.stderr
    header = next(
        line for line in done.stdout.splitlines() if line.split()[:3] == ["minimum", "warm", "read"]
    )
    rows = done.stdout.split(header, 1)[1].splitlines()[1:3]
    assert [row.split()[0] for row in rows] == ["1", "1,000,000"]
    written = json.loads(figures.read_text())
    small, huge = written["replays"]
    assert (written["person"], written["companion"]) == ("Ana", "Ben")
    # The same prompts either way; a cache that keeps nothing reads and writes nothing.
    assert small["input_per_turn"] == huge["input_per_turn"]
    assert small["heart"]["cost_uncached"] == pytest.approx(huge["heart"]["cost_uncached"])
    assert (huge["read_share"], huge["written_share"], huge["uncached_share"]) == (0, 0, 1)
    assert huge["cost_per_turn"] == pytest.approx(huge["cost_per_turn_uncached"])
    assert small["read_share"] > 0 and small["cost_per_turn"] < small["cost_per_turn_uncached"]


@pytest.mark.store_free
def test_the_command_refuses_more_turns_than_the_conversation_has(capsys, tmp_path):
    dataset = tmp_path / "tiny.json"
    dataset.write_text(json.dumps({"conversations": [conversation()], "questions": []}))

    assert main(["cache", str(dataset), "--turns", "13"]) == 1
    assert "c1 has 12 turns of Ana answered by Ben; ask for --turns 12 or fewer" in (
        capsys.readouterr().err
    )
    assert main(["cache", str(dataset), "--conversation", "c2"]) == 1
    assert "no conversation 'c2'" in capsys.readouterr().err


@pytest.mark.store_free
def test_the_command_refuses_a_model_it_has_no_price_for(capsys, tmp_path, settings):
    settings.HEART_MODEL = "claude-unpriced"
    dataset = tmp_path / "tiny.json"
    dataset.write_text(json.dumps({"conversations": [conversation()], "questions": []}))

    assert main(["cache", str(dataset), "--turns", "3"]) == 1
    assert "no price for 'claude-unpriced'" in capsys.readouterr().err
