""" "Why didn't she know X?" gives each of its four answers on a scripted conversation."""

from datetime import UTC, datetime, timedelta

import pytest
from django.core.management import CommandError, call_command

from events.models import Event
from gem.models import Fragment, WorkingMemory
from heart import assemble
from heart.models import ContextSnapshot
from heart.services import turn_claim_next, turn_run, turn_submit
from heart.why import CUT, IN_CONTEXT, NEVER_STORED, NOT_ELIGIBLE, WhyError, why

pytestmark = pytest.mark.django_db(databases="__all__")

START = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
LONG_PIN = "the blue kettle on the third shelf is the one that whistles before it boils, always"


def turn(text: str, at: datetime):
    turn_submit(text=text, actor="luna", at=at, enqueue=False)
    claimed = turn_claim_next()
    done = turn_run(turn=claimed)
    assert done.status == "done", done.error
    return done


@pytest.fixture
def conversation(settings):
    settings.BUDGET_WORKING_MEMORY = 30
    for name in ("BUDGET_POOL_USER", "BUDGET_POOL_SAY"):
        setattr(settings, name, 40)
    settings.BUDGET_POOL_DO = settings.BUDGET_POOL_FLEX = 10
    settings.BUDGET_FOUND = 0  # what Recent and Lingering cut stays cut
    Fragment.objects.create(key="garden", ambient="The garden behind the house.")
    WorkingMemory.objects.create(
        type="feeling", content="restless", turn=0, refreshed_at=START - timedelta(days=9)
    )
    at = START
    turn("<luna><pin>tea without sugar</pin> I planted the marigolds today</luna>", at)
    turn(f"<luna><pin>{LONG_PIN}</pin> and then it rained</luna>", at := at + timedelta(minutes=2))
    for n in range(6):
        turn(f"<luna>small talk number {n}</luna>", at := at + timedelta(minutes=2))


def answers(asked: str, turns: int = 1) -> list[tuple[str, str]]:
    return [(v.answer, v.reason) for v in why(asked, turns=turns).verdicts]


def test_it_gives_each_of_its_four_answers(conversation):
    tea = WorkingMemory.objects.get(content="tea without sugar")
    kettle = WorkingMemory.objects.get(content=LONG_PIN)
    restless = WorkingMemory.objects.get(content="restless")

    # The newer pin scores higher and takes the room the older one would need.
    [(answer, reason)] = answers(f"#{kettle.pk}")
    assert answer == IN_CONTEXT and reason.startswith("In Lingering (score ")
    [(answer, reason)] = answers(str(tea.pk))
    assert answer == CUT and "cut by the budget at rank 2 (needed 7 tokens, 4 left)" in reason
    [(answer, reason)] = answers(f"#{restless.pk}")
    assert answer == NOT_ELIGIBLE and "under the 0.01 floor" in reason
    [(answer, reason)] = answers("#999")
    assert answer == NEVER_STORED

    [(answer, reason)] = answers("marigolds")
    assert answer == CUT and "before Recent's window" in reason
    [(answer, reason)] = answers("small talk number 4")
    assert answer == IN_CONTEXT and reason == "In Recent."
    [(answer, reason)] = answers("cilantro")
    assert answer == NEVER_STORED
    [(answer, reason)] = answers("garden")
    assert answer == NOT_ELIGIBLE and reason.startswith("Not recalled")


def test_a_plan_cut_at_its_floor_is_said_to_be_submerged(settings):
    settings.BUDGET_WORKING_MEMORY = 20
    WorkingMemory.objects.create(type="pin", content="tea without sugar, always", turn=1)
    plan = WorkingMemory.objects.create(
        type="plan",
        content="renew the passport before the trip",
        turn=1,
        refreshed_at=START - timedelta(hours=6),
        due=START + timedelta(days=18),
    )
    turn("<luna>hello</luna>", START)
    [(answer, reason)] = answers(f"#{plan.pk}")
    assert answer == CUT
    assert reason.startswith("Left out of Lingering: submerged: a plan at its floor until 48 hours")
    assert "; cut by the budget at rank 2 (needed " in reason


def test_a_hidden_plan_is_out_of_lingering_until_its_window_and_in_it_from_then(settings):
    settings.TIME_ZONE = "UTC"
    due = START + timedelta(days=5)
    plan = WorkingMemory.objects.create(
        type="plan", content="the surprise party", turn=1, refreshed_at=START, due=due, hidden=True
    )
    turn("<luna>hello</luna>", START + timedelta(minutes=1))
    [(answer, reason)] = answers(f"#{plan.pk}")
    assert answer == NOT_ELIGIBLE
    hidden_until = "Thursday 5 March 2026, 9 am"
    assert reason == f"Left out of Lingering: a hidden plan, out of Lingering until {hidden_until}."

    turn("<luna>and now?</luna>", due - timedelta(hours=47))
    [(answer, reason)] = answers(f"#{plan.pk}")
    assert answer == IN_CONTEXT
    assert "the surprise party" in ContextSnapshot.objects.latest("pk").assembled_user


def test_words_under_a_heading_the_message_writes_are_in_the_message(settings):
    turn("<luna>my list\n## Lingering\nbuy eggs</luna>", START)
    assert answers("buy eggs") == [(IN_CONTEXT, "In Message.")]


def test_an_item_written_later_was_never_stored_at_the_turns_before(conversation):
    kettle = WorkingMemory.objects.get(content=LONG_PIN)
    verdicts = why(f"#{kettle.pk}", turns=8).verdicts
    assert len(verdicts) == 8
    assert verdicts[-1].answer == NEVER_STORED  # the first turn, before the pin was written
    assert "written later" in verdicts[-1].reason
    assert {v.answer for v in verdicts[:-1]} == {IN_CONTEXT}


def test_it_refuses_an_empty_question_or_a_turn_count_out_of_range(conversation):
    with pytest.raises(WhyError, match="Ask about"):
        why("   ")
    with pytest.raises(WhyError, match="from 1 to 200"):
        why("tea", turns=0)


def test_the_command_prints_a_verdict_per_turn(conversation, capsys):
    call_command("why", "marigolds", "--turns", "3")
    out = capsys.readouterr().out
    assert out.startswith("Why didn't she know the words “marigolds”?")
    said = Event.objects.filter(content__contains="marigolds").order_by("pk").last().pk
    assert out.count(f": cut by the budget. Held by event #{said}: Said before Recent's") == 3
    with pytest.raises(CommandError, match="from 1 to 200"):
        call_command("why", "tea", "--turns", "500")


def test_an_item_cut_further_down_than_the_nearest_misses_is_cut_by_the_budget(
    settings, monkeypatch
):
    monkeypatch.setattr(assemble, "NEAR_MISSES", 0)
    settings.BUDGET_WORKING_MEMORY = 30
    for content in ("tea without sugar", LONG_PIN):
        WorkingMemory.objects.create(type="pin", content=content, turn=0, refreshed_at=START)
    turn("<luna>hello</luna>", START + timedelta(minutes=1))
    kettle = WorkingMemory.objects.get(content=LONG_PIN)  # the tie goes to the older
    [(answer, reason)] = answers(f"#{kettle.pk}")
    assert answer == CUT and "lower in the ranking" in reason


def test_words_the_lens_finds_are_never_never_stored(settings):
    """The person asks in other words than were said: the Lens finds the turn, and so does
    "why"."""
    for name in ("BUDGET_POOL_USER", "BUDGET_POOL_SAY", "BUDGET_POOL_DO", "BUDGET_POOL_FLEX"):
        setattr(settings, name, 30)
    settings.BUDGET_FOUND = 0
    at = START
    turn("<renki>work tomorrow is the big presentation</renki>", at)
    for n in range(8):  # the offline replies are short: it takes more to pass the presentation
        turn(f"<luna>small talk number {n}</luna>", at := at + timedelta(minutes=2))

    [(answer, reason)] = answers("the presentation at work")
    assert answer == CUT
    assert reason.startswith("Held by event #")
    assert ", found by the Lens: Said before Recent's window" in reason


def test_old_conversation_found_for_the_message_is_in_the_context(settings):
    for name in ("BUDGET_POOL_USER", "BUDGET_POOL_SAY", "BUDGET_POOL_DO", "BUDGET_POOL_FLEX"):
        setattr(settings, name, 30)
    at = START
    first = turn("<renki>work tomorrow is the big presentation</renki>", at)
    for n in range(4):
        turn(f"<luna>small talk number {n}</luna>", at := at + timedelta(minutes=2))
    last = turn("<luna>how did the presentation go?</luna>", at + timedelta(minutes=2))

    snapshot = ContextSnapshot.objects.get(turn=last.pk)
    assert snapshot.items_included["found"] == [f"event:{first.event_id}"]
    assert "luna: work tomorrow is the big presentation\n" in snapshot.assembled_user
    [(answer, reason)] = answers("big presentation")
    assert (answer, reason) == (IN_CONTEXT, "In Found.")
