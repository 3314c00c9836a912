"""Gathering what Claude wakes up to for one turn, from the stores, for the pure assembler."""

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from datetime import datetime
from functools import lru_cache
from zoneinfo import ZoneInfo

from django.conf import settings
from django.db.models.functions import Length

from events.models import Event
from events.parse import MARKUP, parse, tidy
from events.selectors import as_corrected, corrections_newest
from gem.recalled import Recall
from gem.selectors import GemNow, Identities, decay_pressure, working_memory_scores
from gem.state import (
    PENDING_RECALL,
    RECENT_WINDOW,
    WORKING_MEMORY_FILL,
    chars_per_token_key,
    state_get_many,
)
from gem.zone import owner_time_zone
from heart.assemble import (
    Assembly,
    Budgets,
    ConversationLine,
    LingeringItem,
    SummaryItem,
    assemble,
    recent_window,
    summaries_behind,
    summary_entry_tokens,
    summary_title,
)
from lens.found import found_for_message
from lens.search import search_recalled
from mirror.merge import Span
from mirror.models import Summary
from mirror.selectors import summaries_stale
from silentstar.tokens import DEFAULT_CHARS_PER_TOKEN

POOL_OF = {"say": "say", "do": "do", "narrate": "do"}
# Events are read newest first in pages until their text is twice what the pools can hold
# (so the assembler has enough to choose from), and never more than the cap.
RECENT_PAGE = 100
RECENT_CAP = 1_000


def budgets_from_settings(*, chars_per_token: float) -> Budgets:
    """The budgets of the settings, measured with the calibrated characters per token."""
    return Budgets(
        chars_per_token=chars_per_token,
        working_memory=settings.BUDGET_WORKING_MEMORY,
        recall=settings.BUDGET_RECALL,
        found=settings.BUDGET_FOUND,
        summaries=settings.BUDGET_SUMMARIES,
        pool_user=settings.BUDGET_POOL_USER,
        pool_say=settings.BUDGET_POOL_SAY,
        pool_do=settings.BUDGET_POOL_DO,
        pool_flex=settings.BUDGET_POOL_FLEX,
    )


def conversation_lines(
    events: list[tuple[int, datetime, str, str]], *, who: Identities
) -> list[ConversationLine]:
    """Display text of ``(id, ts, actor, content)`` events, oldest first."""
    key = (tuple(who.names), who.companions)
    return [line for event in events for line in _event_lines(*event, key)]


@lru_cache(maxsize=4 * RECENT_CAP)
def _event_lines(
    event_id: int, ts: datetime, actor: str, content: str, key: tuple
) -> tuple[ConversationLine, ...]:
    """An event's lines: a person's whole message, or the companion's display segments.

    Cached: events never change (the log is append-only), so each is parsed once per process
    for a given set of identities.
    """
    identities, companions = key
    parsed = parse(content, identities=identities)
    if actor in companions:
        return tuple(
            ConversationLine(event_id, ts, actor, POOL_OF[s.kind], s.text) for s in parsed.segments
        )
    # Tags stand between words: adjacent ones ("<plan>a</plan><pin>b</pin>") are two pieces of
    # text, not one run-together word; the message's own spaces and line breaks stay.
    said = tidy("".join(" " if s.role == MARKUP else s.text for s in parsed.spans))
    return (ConversationLine(event_id, ts, actor, "user", said),) if said else ()


def _recent_events(
    *, before: int, chars_wanted: int, corrections_through: int | None = None
) -> list[tuple[int, datetime, str, str]]:
    """The newest events before an id, oldest first, enough to fill the pools twice over, as
    their corrections leave them (a retracted one left out).

    Whole pages are taken until their text is enough, as if read one page per query; as many
    pages as the last call took are read in one query (most turns need what the turn before
    did), so the events taken are the same whichever way they were read.
    """
    events, chars, upper = [], 0, before
    unread: list[tuple[int, datetime, str, str]] = []
    pages_at_once = _recent_pages_last["pages"]
    while chars < chars_wanted and len(events) < RECENT_CAP:
        if not unread:
            unread = list(
                Event.objects.filter(pk__lt=upper)
                .order_by("-pk")
                .values_list("pk", "ts", "actor", "content")[: RECENT_PAGE * pages_at_once]
            )
            pages_at_once = 1
        page, unread = unread[:RECENT_PAGE], unread[RECENT_PAGE:]
        if not page:
            break
        events.extend(page)
        chars += sum(len(content) for *_, content in page)
        upper = page[-1][0]
    _recent_pages_last["pages"] = max(1, math.ceil(len(events) / RECENT_PAGE))
    return as_corrected(events[::-1], through=corrections_through)


_recent_pages_last = {"pages": 1}  # how many pages the last read took, in this process


@dataclass(frozen=True)
class ContextInputs:
    """What a turn's context is assembled from besides the stores: the moment, the turn counter
    and the small values kept between turns. Kept with the snapshot, so the context of any past
    turn can be assembled again (``heart.travel``)."""

    event_id: int | None  # None: the companion writes first (``writing_first`` says why)
    now: datetime
    turn: int
    zone: str
    pressure: float
    chars_per_token: float
    pending_recall: list[dict]
    recent_from: int | None  # where the last turn's Recent window started
    # The newest correction of the log when it was read (None: a snapshot from before
    # corrections were counted, read as the log is now).
    corrections_through: int | None = None
    # Writing first: why, and the newest event of the log then (Recent ends with it).
    writing_first: str = ""
    through_event: int | None = None

    @property
    def before(self) -> int:
        """The context reads the log before this id: the message's, or after the newest event."""
        if self.event_id is not None:
            return self.event_id
        return (self.through_event or 0) + 1

    def as_json(self) -> dict:
        return {**asdict(self), "now": self.now.isoformat()}

    @classmethod
    def from_json(cls, data: dict) -> "ContextInputs":
        return cls(**{**data, "now": datetime.fromisoformat(data["now"])})


def context_inputs(
    *, event: Event | None, now: datetime, current_turn: int, writing_first: str = ""
) -> ContextInputs:
    """The inputs of the context for answering ``event`` at ``now``, read in one query; with no
    event, for writing first (``writing_first`` saying why) after the newest event."""
    calibration = chars_per_token_key()
    state = state_get_many(
        {
            calibration: DEFAULT_CHARS_PER_TOKEN,
            PENDING_RECALL: [],
            WORKING_MEMORY_FILL: 0.0,
            RECENT_WINDOW: None,
        }
    )
    window = state[RECENT_WINDOW] or {}
    return ContextInputs(
        event_id=event.pk if event is not None else None,
        now=now,
        turn=current_turn,
        zone=owner_time_zone(),
        pressure=decay_pressure(state[WORKING_MEMORY_FILL]),
        chars_per_token=state[calibration],
        pending_recall=state[PENDING_RECALL],
        recent_from=window.get("first_event"),
        corrections_through=corrections_newest(),
        writing_first=writing_first,
        through_event=(
            None
            if event is not None
            else Event.objects.order_by("-pk").values_list("pk", flat=True).first()
        ),
    )


def context_for_event(*, event: Event, now: datetime, current_turn: int, gem: GemNow) -> Assembly:
    """The assembled context for answering ``event`` at ``now``, from ``gem`` as read for it."""
    inputs = context_inputs(event=event, now=now, current_turn=current_turn)
    return context_assemble(event=event, inputs=inputs, gem=gem, working_memory=gem.working_memory)


def context_assemble(
    *,
    event: Event | None,
    inputs: ContextInputs,
    gem: GemNow,
    working_memory: Sequence,
    summaries_through: int | None = None,
) -> Assembly:
    """The context for ``event`` from ``inputs``, the Gem as read (``gem``: identities, wake
    text, ambient prose, recall) and its active ``working_memory`` rows.

    ``items_included["summaries_through"]`` is the newest summary that stood then (0: none).
    Given back as ``summaries_through``, the summaries are read as they stood then, for a past
    turn assembled again (``heart.travel``): the ids tell, not the clock, which a turn run with
    ``--at`` does not share, and a summary written later, or one superseded by then, has an id
    above it, or a successor at or below it."""
    budgets = budgets_from_settings(chars_per_token=inputs.chars_per_token)
    pools = budgets.pool_user + budgets.pool_say + budgets.pool_do + budgets.pool_flex
    before = inputs.before
    earlier = _recent_events(
        before=before,
        chars_wanted=2 * 4 * pools,
        corrections_through=inputs.corrections_through,
    )
    scores = working_memory_scores(
        working_memory, now=inputs.now, current_turn=inputs.turn, pressure=inputs.pressure
    )
    lingering = [  # every active item, in no particular order: the assembler chooses by score
        LingeringItem(row.id, row.type, row.content, row.subject, score, row.due)
        for row, score in zip(working_memory, scores, strict=True)
    ]
    pending = inputs.pending_recall
    recalls = [Recall(r["key"], r["deep"]) for r in pending if "key" in r]
    searches = [r["search"] for r in pending if "search" in r]
    # What the message says (its tags are no words of the person's) names fragments that wake
    # in this very turn, before what was asked for last turn, and finds older conversation.
    if event is None:  # writing first: the reason names what wakes and what is found
        said = inputs.writing_first
    else:
        said = " ".join(
            line.text
            for line in conversation_lines(
                [(event.pk, event.ts, event.actor, event.content)], who=gem.identities
            )
        )
    named, woken = gem.woken(said)
    awake = {item.key for item in woken}
    asked = gem.recalled(recalls) + search_recalled(searches, before_event=before)
    recalled = woken + [item for item in asked if item.key not in awake]
    conversation = conversation_lines(earlier, who=gem.identities)
    local_now = inputs.now.astimezone(ZoneInfo(inputs.zone))
    cpt = budgets.chars_per_token
    current = Summary.objects.filter(first_event_id__lt=before)
    if summaries_through is None:
        current = current.filter(superseded_by__isnull=True)
    else:
        current = current.filter(pk__lte=summaries_through).exclude(
            superseded_by__lte=summaries_through
        )
    rows = list(
        current.annotate(chars=Length("content")).values_list(
            "id", "level", "first_event_id", "last_event_id", "chars", "created_at"
        )
    )
    # A summary written before a correction of what it covers is withheld, its events named
    # as not summarised yet, until the Mirror writes it again from the corrected log.
    stale = summaries_stale(
        ((pk, first, last, at) for pk, _, first, last, _, at in rows),
        through=inputs.corrections_through,
    )
    spans = [
        Span(
            pk,
            level,
            first,
            last,
            summary_entry_tokens(summary_title(level, first, last), chars, cpt),
        )
        for pk, level, first, last, chars, _ in rows
        if pk not in stale
    ]
    # Summaries stand for what is older than the Recent window; the window does not depend on
    # the summaries, so it is found first and the summaries are chosen behind it.
    window_first = (
        recent_window(conversation, budgets, held_from=inputs.recent_from).first_event or before
    )
    chosen, unsummarised = summaries_behind(
        spans,
        window_first=window_first,
        log_first=_first_event_before(window_first, spans=spans),
        budgets=budgets,
    )
    contents = dict(
        Summary.objects.filter(pk__in=[s.id for s in chosen]).values_list("id", "content")
    )
    found = found_for_message(said, before_event=window_first)
    summaries = [
        SummaryItem(s.id, s.level, s.first_event_id, s.last_event_id, contents[s.id])
        for s in chosen
    ]
    assembly = assemble(
        wake=gem.wake_text,
        image_text=gem.image_text if event is not None and event.image else None,
        ambient=gem.ambient_prose,
        lingering=lingering,
        summaries=summaries,
        unsummarised=unsummarised,
        recalled=recalled,
        found=found,
        conversation=conversation,
        now=local_now,
        last_message_at=earlier[-1][1].astimezone(local_now.tzinfo) if earlier else None,
        message=event.content if event is not None else "",
        actor=event.actor if event is not None else "",
        budgets=budgets,
        recent_from=inputs.recent_from,
        writing_first=inputs.writing_first if event is None else None,
    )
    assembly.items_included["summaries_through"] = max((s.id for s in spans), default=0)
    assembly.items_included["woken"] = [{"key": name.key, "said": name.said} for name in named]
    return assembly


def _first_event_before(event_id: int, *, spans: list[Span]) -> int | None:
    """The log's first event before ``event_id`` (None when there is none), which the
    not-summarised line starts from while no summary stands behind the window; not read then."""
    if any(span.first_event_id < event_id for span in spans):
        return None
    return Event.objects.filter(pk__lt=event_id).order_by("pk").values_list("pk", flat=True).first()
