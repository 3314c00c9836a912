"""Writing first: the companion may write before the person does, only for the reasons the
person turned on, under rules the person can read.

The reasons (``events.models.NudgeReason``), each off until turned on:

- a plan entering its resurfacing window (the submersion curve's rise, ``gem.decay``) that
  nothing in Recent mentions;
- a silence: the person's last message older than ``SILENTSTAR_NUDGE_SILENCE_DAYS``;
- the Compass's proposals waiting for a decision longer than
  ``SILENTSTAR_NUDGE_PROPOSALS_AFTER_HOURS``.

Each is found once for the same thing (a ``Nudge`` row per reason and thing). The scheduled
decision (``nudges_decide``) writes at most one nudge a run: never in the quiet hours (the
owner's zone), beyond the day's cap, while a reply waits, soon after the person's last message,
or after too many unanswered in a row (``nudge_held``). A reason held back waits and is sent
when the rules let it, if it still holds; one that no longer holds is cancelled. Sent, it is a
turn without a message (``heart.services.turn_first_queue``) whose context says why she writes.
"""

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

from django.conf import settings
from django.contrib.admin.models import CHANGE, LogEntry
from django.db import IntegrityError, transaction
from django.utils import timezone

from events.models import Event, Nudge, NudgeReason, NudgeStatus, Turn, TurnStatus
from gem import decay
from gem.models import State, WorkingMemory, WorkingMemoryStatus, WorkingMemoryType
from gem.selectors import identities_current
from gem.state import RECENT_WINDOW, state_get, state_set
from gem.zone import owner_time_zone
from heart.assemble import due_in_words
from heart.services import events_lock, turn_first_queue
from mirror.models import Proposer, SuggestionStatus, TagSuggestion
from silentstar.words import counted, quoted

logger = logging.getLogger(__name__)

REASONS_ON = "nudge_reasons_on"  # the state key: the reasons the person turned on
NUDGE_LOCK = 7_351_003  # the decision's lock on PostgreSQL (SQLite's write lock otherwise)


@dataclass(frozen=True)
class Found:
    """A reason that holds now, about one thing, in words."""

    reason: str
    thing: str
    said: str


def nudge_reasons_on() -> set[str]:
    """The reasons the person turned on (none at first)."""
    return set(state_get(REASONS_ON, [])) & set(NudgeReason.values)


def nudge_reasons_set(reasons: set[str], *, user_id: int | None = None) -> None:
    """Turn on exactly ``reasons``; a waiting nudge of a reason turned off is cancelled. A
    person's choice (``user_id``) is written in the admin log."""
    unknown = set(reasons) - set(NudgeReason.values)
    if unknown:
        raise ValueError(f"No such reason to write first: {', '.join(sorted(unknown))}.")
    state_set(REASONS_ON, sorted(reasons))
    if user_id is not None:
        named = ", ".join(NudgeReason(value).label for value in sorted(reasons)) or "none"
        LogEntry.objects.log_actions(
            user_id,
            [State.objects.get(key=REASONS_ON)],
            CHANGE,
            f"Reasons she may write first: {named}",
        )
    Nudge.objects.filter(status=NudgeStatus.WAITING).exclude(reason__in=reasons).update(
        status=NudgeStatus.CANCELLED, held="Its reason was turned off."
    )


def nudges_decide(*, now: datetime | None = None) -> Nudge | None:
    """Find the reasons that hold now, cancel those that no longer do, and send the oldest
    waiting nudge when the rules let one go. Returns the nudge sent, if any."""
    now = now or timezone.now()
    on = nudge_reasons_on()
    found = reasons_found(on=on, now=now) if on else []
    for reason in found:
        _found_record(reason, now=now)
    holding = {(reason.reason, reason.thing): reason.said for reason in found}
    for nudge in Nudge.objects.filter(status=NudgeStatus.WAITING):
        if (nudge.reason, nudge.thing) not in holding:
            Nudge.objects.filter(pk=nudge.pk, status=NudgeStatus.WAITING).update(
                status=NudgeStatus.CANCELLED, held="Its reason no longer holds."
            )
    with transaction.atomic(using="events"):
        events_lock(NUDGE_LOCK)  # one decider at a time, whichever worker runs it
        waiting = Nudge.objects.filter(status=NudgeStatus.WAITING).order_by("found_at", "pk")
        nudge = waiting.first()
        if nudge is None:
            return None
        held = nudge_held(now=now)
        if held:
            waiting.update(held=held)
            return None
        # Said as it holds now: a silence held back overnight has grown by then.
        said = holding.get((nudge.reason, nudge.thing), nudge.said)
        Nudge.objects.filter(pk=nudge.pk).update(
            status=NudgeStatus.SENT, decided_at=now, held="", said=said
        )
        turn_first_queue(nudge_id=nudge.pk)
    nudge.refresh_from_db()
    logger.info("Writing first (nudge %s): %s", nudge.pk, nudge.said)
    return nudge


def _found_record(reason: Found, *, now: datetime) -> None:
    """Keep a reason found, once for its thing (two workers finding it at once included)."""
    if Nudge.objects.filter(reason=reason.reason, thing=reason.thing).exists():
        return
    try:
        with transaction.atomic(using="events"):
            Nudge.objects.create(
                reason=reason.reason, thing=reason.thing, said=reason.said, found_at=now
            )
    except IntegrityError:
        pass  # another worker found it first


# --- The rules ---------------------------------------------------------------------------------


def nudge_held(*, now: datetime) -> str:
    """The rule that holds a nudge back now, in words; "" when one may be sent."""
    zone = ZoneInfo(owner_time_zone())
    local = now.astimezone(zone)
    if in_quiet_hours(local, settings.NUDGE_QUIET_HOURS):
        return f"The quiet hours ({quiet_hours_said()})."
    if Turn.objects.filter(status__in=(TurnStatus.QUEUED, TurnStatus.RUNNING)).exists():
        return "A reply is on its way."
    last_said = _last_message_at()
    if last_said is not None:
        since = now - last_said
        if since < timedelta(minutes=settings.NUDGE_AFTER_MESSAGE_MINUTES):
            return "You wrote a moment ago: not in the middle of a conversation."
    sent = Nudge.objects.filter(status=NudgeStatus.SENT)
    unanswered = sent.filter(decided_at__gt=last_said) if last_said else sent
    if unanswered.count() >= settings.NUDGE_UNANSWERED_MAX:
        return (
            f"{counted(settings.NUDGE_UNANSWERED_MAX, 'nudge')} in a row went unanswered: none "
            "until you write."
        )
    day_start = local.replace(hour=0, minute=0, second=0, microsecond=0)
    most = settings.NUDGE_DAILY_MAX
    if sent.filter(decided_at__gte=day_start).count() >= most:
        return f"At most {counted(most, 'nudge')} a day, and today has had {_them(most)}."
    return ""


def in_quiet_hours(local: datetime, hours: tuple[int, int]) -> bool:
    """Whether the local time falls in the quiet hours (minutes after midnight, start to end,
    running past midnight when the end comes first; equal ends: none)."""
    start, end = hours
    minute = local.hour * 60 + local.minute
    if start == end:
        return False
    if start < end:
        return start <= minute < end
    return minute >= start or minute < end


def _them(most: int) -> str:
    return "none to give" if most == 0 else "it" if most == 1 else "them"


def quiet_hours_said() -> str:
    """The quiet hours as a person reads them: "22:00–09:00" ("" when there are none)."""
    start, end = settings.NUDGE_QUIET_HOURS
    if start == end:
        return ""
    return f"{start // 60:02d}:{start % 60:02d}–{end // 60:02d}:{end % 60:02d}"


def _last_message():
    """The person's newest event (``pk``, ``ts``, ``actor``), or None when they never wrote."""
    users = identities_current().users
    said = Event.objects.filter(actor__in=users) if users else Event.objects.none()
    return said.order_by("-pk").values_list("pk", "ts", "actor", named=True).first()


def _last_message_at() -> datetime | None:
    """When the person last wrote."""
    last = _last_message()
    return last.ts if last is not None else None


# --- The reasons -------------------------------------------------------------------------------


def reasons_found(*, on: set[str], now: datetime) -> list[Found]:
    """The reasons among ``on`` that hold now, each about its thing."""
    found: list[Found] = []
    if NudgeReason.PLAN in on:
        found += _plans_coming_due(now)
    if NudgeReason.SILENCE in on:
        found += _silence(now)
    if NudgeReason.PROPOSALS in on:
        found += _proposals_waiting(now)
    return found


def _plans_coming_due(now: datetime) -> list[Found]:
    """Active plans in the rise of their curve (resurfacing before their due) that nothing in
    the last turn's Recent window mentions."""
    plans = WorkingMemory.objects.filter(
        status=WorkingMemoryStatus.ACTIVE, type=WorkingMemoryType.PLAN, due__gt=now
    ).values_list("id", "content", "due", "refreshed_at", "event_id")
    recent = _recent_texts()
    zone = ZoneInfo(owner_time_zone())
    found = []
    for pk, content, due, refreshed_at, event_id in plans:
        phases = decay.plan_phases(refreshed_at=refreshed_at, due=due)
        rising = any(
            phase.name == "rise" and phase.start <= now < (phase.end or due) for phase in phases
        )
        if not rising or _mentioned(content, event_id, recent):
            continue
        said = f"the plan {quoted(content)} is due {due_in_words(due, now.astimezone(zone))}."
        found.append(Found(NudgeReason.PLAN, f"plan {pk} due {due.isoformat()}", said))
    return found


def _recent_texts() -> dict[int, str]:
    """The events of the last turn's Recent window, by id, casefolded."""
    window = state_get(RECENT_WINDOW, None) or {}
    first = window.get("first_event")
    if first is None:
        return {}
    return {
        pk: content.casefold()
        for pk, content in Event.objects.filter(pk__gte=first).values_list("pk", "content")
    }


def _mentioned(content: str, event_id: int | None, recent: dict[int, str]) -> bool:
    """Whether Recent holds the plan: the message it came from, or its words said again."""
    words = " ".join(content.casefold().split())
    return event_id in recent or any(words in text for text in recent.values())


def _silence(now: datetime) -> list[Found]:
    """The person's last message, when it is older than the silence the person set."""
    last = _last_message()
    if last is None or now - last.ts < timedelta(days=settings.NUDGE_SILENCE_DAYS):
        return []
    said = f"{last.actor} has not written for {counted((now - last.ts).days, 'day')}."
    return [Found(NudgeReason.SILENCE, f"silence after event {last.pk}", said)]


def _proposals_waiting(now: datetime) -> list[Found]:
    """The Compass's pending proposals staged longer ago than the person lets them wait."""
    waiting = TagSuggestion.objects.filter(
        proposer=Proposer.COMPASS,
        status=SuggestionStatus.PENDING,
        created_at__lte=now - timedelta(hours=settings.NUDGE_PROPOSALS_AFTER_HOURS),
    )
    rows = list(waiting.order_by("pk").values_list("pk", "content"))
    if not rows:
        return []
    newest = rows[-1][0]
    named = ", ".join(quoted(content) for _, content in rows[:3])
    more = f" and {len(rows) - 3:,} more" if len(rows) > 3 else ""
    said = (
        f"the Compass proposed {counted(len(rows), 'plan')} that still wait for a decision: "
        f"{named}{more}."
    )
    return [Found(NudgeReason.PROPOSALS, f"proposals through {newest}", said)]
