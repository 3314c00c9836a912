"""Consulting the Compass through the real SDK and the fake Messages API (``compass.services``)."""

from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone

from bench.fakeapi import FakeError, FakeReply
from compass.answer import answer_render
from compass.models import Consultation, Proposal
from compass.services import (
    ConsultationError,
    consultation_ask,
    consultation_retry,
    consultation_run,
    consultations_recover,
    review_ask,
    review_start,
)
from events.models import Event
from gem.models import WorkingMemory
from gem.selectors import gem_current
from gem.services import time_zone_set, working_memory_create
from heart.context import context_for_event
from heart.inspect import sections_of
from ledger.models import ModelCall
from mirror.models import TagSuggestion
from mirror.services import SuggestionError, suggestion_promote

pytestmark = pytest.mark.django_db(databases="__all__")

ZONE = "Europe/Amsterdam"
AMSTERDAM = ZoneInfo(ZONE)
NOW = datetime(2027, 3, 1, 9, 0, tzinfo=AMSTERDAM)  # a Monday, ahead of the real clock
THREE_PLANS = answer_render(
    "A month of training: build up, rest, then test yourself.",
    [
        {"plan": "Run 5 km easy", "due": "2027-03-02T07:30", "why": "The base.", "hidden": False},
        {"plan": "Rest and stretch", "due": "friday at 6pm", "why": "Recover.", "hidden": False},
        {"plan": "A surprise race", "due": "2027-03-20T10:00", "why": "A goal.", "hidden": True},
    ],
)


@pytest.fixture(autouse=True)
def owners_zone():
    time_zone_set(name=ZONE)


@pytest.fixture
def person(db):
    return get_user_model().objects.create_superuser("mono", password="x")


def asked(question="a training plan for the next month") -> Consultation:
    """A consultation written queued (as ``consultation_ask`` writes it), not yet answered."""
    return Consultation.objects.create(question=question, asked_by="mono")


def test_a_consultation_stages_plans_with_dues_and_reasons_and_nothing_more(fake_api):
    fake_api.push(FakeReply(THREE_PLANS))
    done = consultation_run(consultation_id=asked().pk, now=NOW)

    assert (done.status, done.error, done.attempts) == ("done", "", 1)
    assert done.reasoning == "A month of training: build up, rest, then test yourself."
    staged = [p.suggestion for p in done.proposals.select_related("suggestion")]
    assert [(s.proposer, s.type, s.content, s.due, s.reason, s.hidden) for s in staged] == [
        (
            "compass",
            "plan",
            "Run 5 km easy",
            datetime(2027, 3, 2, 7, 30, tzinfo=AMSTERDAM),
            "The base.",
            False,
        ),
        (
            "compass",
            "plan",
            "Rest and stretch",
            datetime(2027, 3, 5, 18, 0, tzinfo=AMSTERDAM),
            "Recover.",
            False,
        ),
        (
            "compass",
            "plan",
            "A surprise race",
            datetime(2027, 3, 20, 10, 0, tzinfo=AMSTERDAM),
            "A goal.",
            True,
        ),
    ]
    assert not WorkingMemory.objects.exists()
    sent = fake_api.requests[0]
    assert "## The question\na training plan for the next month" in sent["messages"][0]["content"]
    assert "Monday 2027-03-01 09:00 in Europe/Amsterdam" in sent["messages"][0]["content"]
    assert sent["system"][0]["text"].startswith("You are the Compass")
    assert "## Fragments the question names" not in sent["messages"][0]["content"]


def test_promoting_two_of_three_with_an_edit_writes_exactly_two_active_plans(fake_api, person):
    fake_api.push(FakeReply(THREE_PLANS))
    done = consultation_run(consultation_id=asked().pk, now=NOW)
    first, second, third = (p.suggestion for p in done.proposals.select_related("suggestion"))
    moved = datetime(2027, 3, 6, 10, 0, tzinfo=AMSTERDAM)

    suggestion_promote(suggestion_id=first.pk, user_id=person.pk)
    suggestion_promote(
        suggestion_id=second.pk,
        user_id=person.pk,
        edits={"content": "Rest, stretch and sleep in", "due": moved},
    )

    plans = WorkingMemory.objects.order_by("pk")
    assert [(p.type, p.status, p.content, p.due, p.actor) for p in plans] == [
        ("plan", "active", "Run 5 km easy", first.due, "compass"),
        ("plan", "active", "Rest, stretch and sleep in", moved, "compass"),
    ]
    third.refresh_from_db()
    assert third.status == "pending"


def test_a_promoted_hidden_plan_is_out_of_lingering_until_its_window(fake_api, person):
    fake_api.push(FakeReply(THREE_PLANS))
    done = consultation_run(consultation_id=asked().pk, now=NOW)
    hidden = done.proposals.get(position=2).suggestion
    suggestion_promote(suggestion_id=hidden.pk, user_id=person.pk)
    event = Event.objects.create(ts=NOW, content="hello", actor="luna")

    def lingering(at: datetime) -> str:
        assembly = context_for_event(event=event, now=at, current_turn=1, gem=gem_current())
        return sections_of(assembly.user_text).get("Lingering", "")

    due = hidden.due
    assert "A surprise race" not in lingering(due - timedelta(hours=49))
    assert "A surprise race" in lingering(due - timedelta(hours=47))


def answer_with_due(due: str) -> str:
    return answer_render(
        "Reasons.",
        [
            {"plan": "Stretch", "due": "2027-03-02T08:00", "why": "Loose.", "hidden": False},
            {"plan": "Swim", "due": due, "why": "Water.", "hidden": False},
        ],
    )


@pytest.mark.parametrize(
    ("reply", "says"),
    [
        (FakeReply("I think you should run more."), "no fenced JSON list of proposals"),
        (
            FakeReply(answer_with_due("2027-02-27T09:00")),
            "Proposal 2 (“Swim”) is due 27 Feb 2027, 09:00, which is not after 1 Mar 2027, 09:00",
        ),
        (FakeReply(answer_with_due("when the water is warm")), "Proposal 2 (“Swim”): its due"),
        (FakeError(400, "max_tokens is too large"), "The call to Claude failed: Claude's API"),
    ],
    ids=["unparseable", "past-due", "unreadable-due", "failed-call"],
)
def test_a_refused_answer_or_a_failed_call_stages_nothing_and_a_retry_succeeds(
    fake_api, person, reply, says
):
    fake_api.push(reply)
    failed = consultation_run(consultation_id=asked().pk, now=NOW)

    assert failed.status == "failed"
    assert says in failed.error
    assert not TagSuggestion.objects.exists() and not Proposal.objects.exists()

    fake_api.push(FakeReply(THREE_PLANS))
    retried = consultation_retry(consultation_id=failed.pk, user=person)

    assert (retried.status, retried.error, retried.attempts) == ("done", "", 2)
    assert retried.proposals.count() == 3


def test_only_a_failed_consultation_is_retried(fake_api):
    fake_api.push(FakeReply(THREE_PLANS))
    done = consultation_run(consultation_id=asked().pk, now=NOW)
    with pytest.raises(ConsultationError, match="is done: only a failed one is retried"):
        consultation_retry(consultation_id=done.pk)
    with pytest.raises(ConsultationError, match="no consultation 999"):
        consultation_retry(consultation_id=999)


def test_asking_queues_the_answer_and_logs_the_person(fake_api, person):
    fake_api.push(FakeReply(THREE_PLANS))
    consultation = consultation_ask(question="  help me prepare for the move ", user=person)
    assert (consultation.status, consultation.question, consultation.asked_by) == (
        "done",
        "help me prepare for the move",
        "mono",
    )
    with pytest.raises(ConsultationError, match="the question is empty"):
        consultation_ask(question="   ", user=person)


@pytest.mark.parametrize(("allowed", "tools"), [(False, None), (True, ["web_search"])])
def test_web_search_is_offered_only_when_allowed_and_each_call_is_in_the_ledger(
    fake_api, settings, allowed, tools
):
    settings.WEB_SEARCH = allowed
    fake_api.push(FakeReply(THREE_PLANS, web_searches=2 if allowed else 0))
    done = consultation_run(consultation_id=asked().pk, now=NOW)

    sent = fake_api.requests[0]
    offered = [tool["name"] for tool in sent["tools"]] if "tools" in sent else None
    assert offered == tools
    assert sent["model"] == settings.COMPASS_MODEL
    assert done.web_search is allowed
    call = ModelCall.objects.get()
    assert (call.component, call.web_searches) == ("compass-consult", 2 if allowed else 0)


def overdue_and_clash() -> list[int]:
    at = {"type": "plan", "actor": "luna", "at": NOW - timedelta(days=10), "turn": 1}
    return [
        working_memory_create(content=content, due=due, **at).item.pk
        for content, due in [
            ("call the physio", NOW - timedelta(days=2)),
            ("dentist check-up", NOW + timedelta(days=2)),
            ("piano lesson", NOW + timedelta(days=2, minutes=30)),
        ]
    ]


def test_the_weekly_review_proposes_for_an_overdue_plan_and_a_clash(fake_api, settings):
    physio, dentist, piano = overdue_and_clash()
    fake_api.push(
        FakeReply(
            answer_render(
                "The physio call slipped; the dentist and the piano collide.",
                [
                    {"plan": "Call the physio", "due": "2027-03-02T10:00", "why": "Overdue."},
                    {"plan": "Move the piano lesson", "due": "in 1 day", "why": "Clash."},
                ],
            )
        )
    )
    review = review_start(now=NOW)

    assert (review.kind, review.status) == ("review", "done")
    sent = fake_api.requests[0]["messages"][0]["content"]
    findings = sent.split("## Findings of the review\n", 1)[1].split("\n\n## ", 1)[0]
    assert findings.splitlines() == [
        f"- overdue: plan wm {physio} “call the physio” was due Sat 2027-02-27 09:00, and is "
        "still active (2 days ago).",
        f"- clash: plan wm {dentist} “dentist check-up” (due Wed 2027-03-03 09:00) and plan "
        f"wm {piano} “piano lesson” (due Wed 2027-03-03 09:30) are due within an hour of each "
        "other.",
    ]
    assert review.findings == findings
    assert [p.suggestion.content for p in review.proposals.all()] == [
        "Call the physio",
        "Move the piano lesson",
    ]
    assert ModelCall.objects.get().component == "compass-review"


def test_the_review_runs_only_once_its_days_are_out(fake_api, settings):
    overdue_and_clash()
    settings.COMPASS_REVIEW_DAYS = 7
    Consultation.objects.create(
        kind="review", status="done", started_at=NOW - timedelta(days=6, hours=23)
    )
    assert review_start(now=NOW) is None
    assert fake_api.requests == []

    fake_api.push(FakeReply(answer_render("Nothing new.", [])))
    later = review_start(now=NOW + timedelta(hours=2))
    assert later is not None and later.status == "done"
    assert review_start(now=NOW + timedelta(hours=3)) is None
    settings.COMPASS_REVIEW_DAYS = 0
    assert review_start(now=NOW + timedelta(days=30)) is None
    assert len(fake_api.requests) == 1


def test_a_review_that_failed_waits_a_day_before_the_schedule_tries_again(fake_api):
    overdue_and_clash()
    fake_api.push(FakeError(400, "bad"))
    assert review_start(now=NOW).status == "failed"
    assert review_start(now=NOW + timedelta(hours=23)) is None
    fake_api.push(FakeReply(answer_render("Fine.", [])))
    assert review_start(now=NOW + timedelta(hours=25)).status == "done"


def test_there_is_no_review_of_an_empty_working_memory(fake_api):
    assert review_start(now=NOW) is None
    assert fake_api.requests == []


def test_a_consultation_left_running_by_a_dead_worker_fails_with_a_retry(fake_api, settings):
    stuck = Consultation.objects.create(
        question="q", status="running", started_at=NOW - timedelta(hours=1), attempts=1
    )
    fresh = Consultation.objects.create(question="q", status="running", started_at=NOW)
    assert consultations_recover(stale_after=timedelta(minutes=16), now=NOW) == [stuck.pk]
    stuck.refresh_from_db()
    fresh.refresh_from_db()
    assert stuck.status == "failed" and "The worker stopped" in stuck.error
    assert fresh.status == "running"


def test_a_consultation_recovered_after_one_minute_says_one_minute(fake_api):
    stuck = Consultation.objects.create(
        question="q", status="running", started_at=NOW - timedelta(minutes=5), attempts=1
    )
    consultations_recover(stale_after=timedelta(minutes=1), now=NOW)
    stuck.refresh_from_db()
    assert "(no answer after 1 minute);" in stuck.error


def test_a_proposal_cannot_be_promoted_once_its_due_has_passed(fake_api, person):
    fake_api.push(FakeReply(THREE_PLANS))
    done = consultation_run(consultation_id=asked().pk, now=NOW)
    first = done.proposals.get(position=0).suggestion
    with pytest.raises(SuggestionError, match="has passed"):
        suggestion_promote(
            suggestion_id=first.pk,
            user_id=person.pk,
            edits={"due": datetime(2020, 1, 1, tzinfo=AMSTERDAM)},
        )
    assert not WorkingMemory.objects.exists()


def test_a_person_asks_for_a_review_at_once_but_only_one_runs_at_a_time(fake_api, person):
    overdue_and_clash()
    Consultation.objects.create(kind="review", status="done", started_at=timezone.now())
    fake_api.push(FakeReply(answer_render("Asked for.", [])))
    review = review_ask(user=person)
    assert (review.kind, review.status, review.asked_by) == ("review", "done", "mono")
    assert "Findings of the review" in fake_api.requests[0]["messages"][0]["content"]

    Consultation.objects.create(kind="review")
    with pytest.raises(ConsultationError, match="A review is already under way"):
        review_ask(user=person)


def test_an_answer_cut_off_at_the_token_limit_says_so(fake_api, settings):
    settings.AGENT_MAX_TOKENS = 300
    fake_api.push(FakeReply(THREE_PLANS[:200], stop_reason="max_tokens"))
    failed = consultation_run(consultation_id=asked().pk, now=NOW)
    assert failed.status == "failed"
    assert failed.error.endswith("cut off at 300 tokens (SILENTSTAR_AGENT_MAX_TOKENS).")
    assert fake_api.requests[0]["max_tokens"] == 300
