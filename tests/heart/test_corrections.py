"""Corrections of the log (heart/corrections.py), followed by the next turn's context and the
search, through the real SDK and the fake Messages API."""

from datetime import UTC, datetime, timedelta

import pytest
from django.db import IntegrityError, connections, transaction

from bench.fakeapi import FakeReply
from events.models import Correction, Event, Purge, Turn
from gem.models import WorkingMemory
from gem.services import working_memory_update
from gem.state import TURN_COUNTER, state_get
from heart import corrections
from heart.corrections import (
    CorrectionError,
    correction_make,
    event_purge,
    purge_reach,
    reply_choose,
)
from heart.models import ContextSnapshot
from heart.services import TurnOrderError, turn_again, turn_submit
from heart.tasks import run_turns_task
from lens.search import search

pytestmark = pytest.mark.django_db(databases="__all__")

START = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


def answered(fake_api, text: str, at: datetime, *, actor: str = "luna") -> Turn:
    fake_api.push(FakeReply("<say>mm</say>"))
    submitted = turn_submit(text=text, actor=actor, at=at, enqueue=False)
    run_turns_task(submitted.pk)
    submitted.refresh_from_db()
    assert submitted.status == "done", submitted.error
    return submitted


def sent_user_text(fake_api) -> str:
    return "".join(block["text"] for block in fake_api.requests[-1]["messages"][0]["content"])


def found(words: str) -> set[int]:
    """The events whose index rows hold ``words``: their own or, as context, the turn's before."""
    return {hit.id for hit in search(words, kinds=("event",), limit=20, words_only=True)}


@pytest.fixture
def said(fake_api):
    """A message about a sister, answered, then another exchange after it."""
    first = answered(fake_api, "<luna>my sister Mara phoned about the quince jam</luna>", START)
    answered(fake_api, "<luna>anyway the weather</luna>", START + timedelta(minutes=2))
    return first


def test_an_edit_is_appended_and_the_next_turn_reads_the_new_text(fake_api, said):
    correction_make(
        event_id=said.event_id,
        kind="edit",
        text="<luna>my sister Maren phoned about the plum jam</luna>",
        made_by="owner",
    )
    answered(fake_api, "<luna>and so</luna>", START + timedelta(minutes=4))

    sent = sent_user_text(fake_api)
    assert "luna: my sister Maren phoned about the plum jam" in sent
    assert "Mara " not in sent and "quince" not in sent
    assert Event.objects.get(pk=said.event_id).content.startswith("<luna>my sister Mara phoned")
    assert Correction.objects.get().made_by == "owner"


def test_the_search_finds_the_edited_words_and_no_longer_the_old_ones(said):
    assert said.event_id in found("quince")

    correction_make(
        event_id=said.event_id, kind="edit", text="<luna>plum jam it was</luna>", made_by="owner"
    )

    assert found("quince") == set()  # nor by the context of the turns after it
    assert said.event_id in found("plum")


def test_a_retracted_message_is_in_no_later_context_nor_search_and_the_log_keeps_it(fake_api, said):
    correction_make(event_id=said.event_id, kind="retraction", made_by="owner")
    answered(fake_api, "<luna>the garden needs rain</luna>", START + timedelta(minutes=4))

    assert "quince" not in sent_user_text(fake_api)
    assert found("quince") == set() and found("Mara") == set()
    assert "quince" in Event.objects.get(pk=said.event_id).content

    correction_make(event_id=said.event_id, kind="restoration", made_by="owner")

    assert said.event_id in found("quince")


def test_an_event_logged_after_a_retraction_holds_none_of_its_words_as_context(fake_api):
    first = answered(fake_api, "<luna>the safe code is 4471 quasar</luna>", START)
    correction_make(event_id=first.event_id, kind="retraction", made_by="owner")

    answered(fake_api, "<luna>forget that</luna>", START + timedelta(minutes=2))

    assert found("quasar") == set()


def test_a_re_attributed_message_is_shown_as_the_other_identitys(fake_api, said):
    correction_make(event_id=said.event_id, kind="attribution", actor="renki", made_by="owner")
    answered(fake_api, "<luna>and so</luna>", START + timedelta(minutes=4))

    sent = sent_user_text(fake_api)
    assert "renki: my sister Mara phoned about the quince jam" in sent
    [hit] = [hit for hit in search("quince", kinds=("event",)) if hit.id == said.event_id]
    assert hit.actor == "renki"


@pytest.mark.parametrize(
    ("kind", "fields", "refusal"),
    [
        ("edit", {"text": "  "}, "An edit needs text"),
        ("edit", {"text": "x" * 20_001}, "20,000 characters at most"),
        (
            "edit",
            {"text": "<luna>my sister Mara phoned about the quince jam</luna>"},
            "already says that",
        ),
        ("attribution", {"actor": "claude"}, "the person's identities only"),
        ("attribution", {"actor": "nobody"}, "There is no identity “nobody”"),
        ("attribution", {"actor": "luna"}, "already luna's"),
        ("restoration", {}, "is not retracted"),
        ("delete", {}, "“delete” is no correction"),
    ],
)
def test_a_correction_that_cannot_be_made_is_refused_in_words(said, kind, fields, refusal):
    with pytest.raises(CorrectionError, match=refusal):
        correction_make(event_id=said.event_id, kind=kind, made_by="owner", **fields)
    assert not Correction.objects.exists()


def test_a_reply_can_be_given_only_to_another_identity_of_the_companions(said):
    with pytest.raises(CorrectionError, match="the companion's identities only"):
        correction_make(
            event_id=said.reply_event_id, kind="attribution", actor="renki", made_by="owner"
        )


def test_a_retracted_message_is_restored_before_anything_else(said):
    correction_make(event_id=said.event_id, kind="retraction", made_by="owner")

    for kind, fields in [("retraction", {}), ("edit", {"text": "x"})]:
        with pytest.raises(CorrectionError, match="restore it first"):
            correction_make(event_id=said.event_id, kind=kind, made_by="owner", **fields)
    assert Correction.objects.count() == 1


def test_an_unknown_message_and_one_still_being_answered_are_refused(said):
    with pytest.raises(CorrectionError, match="There is no message #999999"):
        correction_make(event_id=999_999, kind="retraction", made_by="owner")

    waiting = turn_submit(text="<luna>wait</luna>", actor="luna", enqueue=False)
    with pytest.raises(CorrectionError, match="still being answered"):
        correction_make(event_id=waiting.event_id, kind="retraction", made_by="owner")
    assert not Correction.objects.exists()


def test_of_two_corrections_at_once_the_second_is_refused_and_writes_nothing(said, monkeypatch):
    refusal = corrections._refusal

    def corrected_meanwhile(*args, **kwargs):
        refusal(*args, **kwargs)
        Correction.objects.create(
            event_id=said.event_id, sequence=0, kind="retraction", made_by="someone"
        )

    monkeypatch.setattr(corrections, "_refusal", corrected_meanwhile)

    with pytest.raises(CorrectionError, match="corrected by someone else meanwhile"):
        correction_make(event_id=said.event_id, kind="edit", text="<luna>zebra</luna>", made_by="b")
    assert list(Correction.objects.values_list("made_by", flat=True)) == ["someone"]
    assert found("zebra") == set()  # nor was the index written


# --- working memory follows -------------------------------------------------------------------


def active(**filters) -> list[WorkingMemory]:
    return list(WorkingMemory.objects.filter(status="active", **filters).order_by("pk"))


def test_a_retracted_pin_is_dropped_with_the_reason_and_comes_back_when_restored(fake_api):
    turn = answered(fake_api, "<luna><pin>the spare key is under the blue pot</pin></luna>", START)
    [pin] = active(type="pin")

    made = correction_make(event_id=turn.event_id, kind="retraction", made_by="owner")

    assert made.dropped == [pin.pk] and active() == []
    pin.refresh_from_db()
    assert pin.status == "dropped"
    answered(fake_api, "<luna>hello</luna>", START + timedelta(minutes=2))
    assert "blue pot" not in sent_user_text(fake_api)

    made = correction_make(event_id=turn.event_id, kind="restoration", made_by="owner")

    [again] = active(type="pin")
    assert made.written == [again.pk] and again.content == "the spare key is under the blue pot"


def test_an_edited_plans_due_date_moves(fake_api, settings):
    turn = answered(fake_api, "<luna><plan>call the dentist on 2026-03-06</plan></luna>", START)
    [plan] = active(type="plan")
    assert plan.due.date().isoformat() == "2026-03-06"

    made = correction_make(
        event_id=turn.event_id,
        kind="edit",
        text="<luna><plan>call the dentist on 2026-03-09</plan></luna>",
        made_by="owner",
    )

    [moved] = active(type="plan")
    assert made.dropped == [plan.pk] and made.written == [moved.pk]
    assert moved.due.date().isoformat() == "2026-03-09"
    assert "dentist" in moved.content and moved.event_id == turn.event_id


def test_words_around_the_tags_edited_leave_working_memory_alone(fake_api):
    turn = answered(fake_api, "<luna>so <pin>oat milk, not soy</pin> ok</luna>", START)
    [pin] = active(type="pin")

    made = correction_make(
        event_id=turn.event_id,
        kind="edit",
        text="<luna>remember: <pin>oat milk, not soy</pin></luna>",
        made_by="owner",
    )

    assert (made.dropped, made.written) == ([], []) and active() == [pin]


def test_a_re_attributed_pin_is_the_other_identitys(fake_api):
    turn = answered(fake_api, "<luna><pin>no calls after nine</pin></luna>", START)

    made = correction_make(
        event_id=turn.event_id, kind="attribution", actor="renki", made_by="owner"
    )

    [pin] = active(type="pin")
    assert made.moved == [pin.pk] and pin.actor == "renki"


def test_an_item_a_person_changed_since_is_kept_and_listed(fake_api):
    turn = answered(fake_api, "<luna><pin>the wifi code is on the fridge</pin></luna>", START)
    [pin] = active(type="pin")
    working_memory_update(item_id=pin.pk, at=START, content="the wifi code: on the fridge door")

    made = correction_make(event_id=turn.event_id, kind="retraction", made_by="owner")

    assert made.kept == [pin.pk] and made.dropped == [] and active() == [pin]


def test_a_plan_the_retracted_message_resolved_is_active_again(fake_api):
    answered(fake_api, "<luna><plan>water the ferns</plan></luna>", START)
    resolving = answered(
        fake_api, "<luna><plan>done: water the ferns</plan></luna>", START + timedelta(minutes=2)
    )
    assert active(type="plan") == []

    made = correction_make(event_id=resolving.event_id, kind="retraction", made_by="owner")

    [plan] = active(type="plan")
    assert made.reopened == [plan.pk] and plan.content == "water the ferns"


# --- purge -------------------------------------------------------------------------------------


def raw(sql: str, params=()):
    with transaction.atomic(using="events"), connections["events"].cursor() as cursor:
        cursor.execute(sql, params)


def test_a_purge_blanks_a_retracted_message_everywhere_it_was_copied_and_is_recorded(fake_api):
    secret = answered(fake_api, "<luna><pin>the safe code is 4471 9902</pin></luna>", START)
    answered(fake_api, "<luna>anyway</luna>", START + timedelta(minutes=2))
    assert "4471 9902" in ContextSnapshot.objects.order_by("-id").first().assembled_user
    correction_make(event_id=secret.event_id, kind="retraction", made_by="owner")
    assert purge_reach(secret.event_id)["snapshots"] == 2  # its own turn's and the next's

    purge = event_purge(event_id=secret.event_id, purged_by="owner")

    event = Event.objects.get(pk=secret.event_id)
    assert (event.content, event.image.name) == ("", "")
    assert purge.blanked == {"snapshots": 2, "summaries": 0, "working_memory": 1}
    assert not ContextSnapshot.objects.filter(assembled_user__contains="4471").exists()
    assert "[purged]" in ContextSnapshot.objects.order_by("-id").first().assembled_user
    assert WorkingMemory.objects.get(event_id=secret.event_id).content == "[purged]"
    assert found("4471") == set()
    assert Purge.objects.get().purged_by == "owner"


def test_an_edit_of_a_purged_message_is_blanked_too(said):
    correction_make(
        event_id=said.event_id, kind="edit", text="<luna>my PIN is 5531</luna>", made_by="o"
    )
    correction_make(event_id=said.event_id, kind="retraction", made_by="o")

    event_purge(event_id=said.event_id, purged_by="owner")

    assert list(Correction.objects.values_list("kind", "text")) == [
        ("edit", ""),
        ("retraction", ""),
    ]


def test_only_a_message_taken_back_is_purged_and_only_once(said):
    with pytest.raises(CorrectionError, match="not taken back: take it back first"):
        event_purge(event_id=said.event_id, purged_by="owner")
    with pytest.raises(CorrectionError, match="There is no message #999999"):
        event_purge(event_id=999_999, purged_by="owner")
    correction_make(event_id=said.event_id, kind="retraction", made_by="owner")
    event_purge(event_id=said.event_id, purged_by="owner")
    with pytest.raises(CorrectionError, match="purged already"):
        event_purge(event_id=said.event_id, purged_by="owner")
    assert Purge.objects.count() == 1


def test_the_database_lets_a_row_change_only_to_nothing_and_only_once_purged(said):
    with pytest.raises(IntegrityError, match="append-only"):
        raw("UPDATE heart_event SET content = '' WHERE id = %s", [said.event_id])
    correction_make(event_id=said.event_id, kind="retraction", made_by="owner")
    event_purge(event_id=said.event_id, purged_by="owner")
    for sql in (
        "UPDATE heart_event SET content = 'back' WHERE id = %s",
        "UPDATE heart_event SET actor = 'renki' WHERE id = %s",
        "DELETE FROM heart_event WHERE id = %s",
        "UPDATE events_correction SET text = 'x' WHERE event_id = %s",
        "UPDATE events_purge SET purged_by = 'x' WHERE event_id = %s",
        "DELETE FROM events_purge WHERE event_id = %s",
    ):
        with pytest.raises(IntegrityError, match="append-only"):
            raw(sql, [said.event_id])
    assert Purge.objects.get().purged_by == "owner"


# --- the replies to one message ----------------------------------------------------------------


def asked_again(fake_api, turn: Turn, reply: str) -> Turn:
    fake_api.push(FakeReply(reply))
    again = turn_again(turn_id=turn.pk)
    run_turns_task(again.pk)
    again.refresh_from_db()
    assert again.status == "done", again.error
    return again


def test_asked_again_the_new_reply_counts_and_the_first_is_set_aside_and_chosen_back(fake_api):
    fake_api.push(FakeReply("<say>Why did the owl stay in?</say><feeling>playful</feeling>"))
    first = turn_submit(text="<luna>tell me a joke</luna>", actor="luna", at=START, enqueue=False)
    run_turns_task(first.pk)
    first.refresh_from_db()
    counter = state_get(TURN_COUNTER)

    again = asked_again(fake_api, first, "<say>A seal walks into a club.</say>")

    assert (again.event_id, again.number, again.again_of_id) == (
        first.event_id,
        first.number,
        first.pk,
    )
    assert state_get(TURN_COUNTER) == counter  # it counts the person's messages
    aside = Correction.objects.get(event_id=first.reply_event_id)
    assert (aside.kind, aside.made_by) == ("aside", "asked again")
    assert active(type="feeling") == []  # the set-aside reply's feeling went with it
    answered(fake_api, "<luna>ha</luna>", START + timedelta(minutes=2))
    sent = sent_user_text(fake_api)
    assert "A seal walks into a club." in sent and "owl" not in sent

    reply_choose(turn_id=first.pk, made_by="owner")

    answered(fake_api, "<luna>and?</luna>", START + timedelta(minutes=4))
    sent = sent_user_text(fake_api)
    assert "owl" in sent and "A seal" not in sent
    assert [feeling.content for feeling in active(type="feeling")] == ["playful"]
    assert found("seal") == set() and first.reply_event_id in found("owl")


def test_only_the_newest_reply_is_asked_for_again_and_once_at_a_time(fake_api, said):
    with pytest.raises(TurnOrderError, match="Only the newest reply"):
        turn_again(turn_id=said.pk)
    newest = Turn.objects.order_by("-pk").first()
    turn_again(turn_id=newest.pk)
    with pytest.raises(TurnOrderError, match="answering that message again already"):
        turn_again(turn_id=newest.pk)
    with pytest.raises(TurnOrderError, match="There is no reply of turn 999999"):
        turn_again(turn_id=999_999)


def test_a_reply_taken_back_is_not_chosen_and_a_message_is_no_reply(fake_api, said):
    again = asked_again(fake_api, Turn.objects.order_by("-pk").first(), "<say>Another.</say>")
    first_reply = Turn.objects.get(pk=again.again_of_id).reply_event_id
    with pytest.raises(CorrectionError, match="set aside for another reply: choose it instead"):
        correction_make(event_id=first_reply, kind="restoration", made_by="owner")
    with pytest.raises(CorrectionError, match="only a reply is chosen or not"):
        correction_make(event_id=said.event_id, kind="aside", made_by="owner")
    correction_make(event_id=again.reply_event_id, kind="retraction", made_by="owner")
    with pytest.raises(CorrectionError, match="was taken back: restore it before choosing it"):
        reply_choose(turn_id=again.pk, made_by="owner")
