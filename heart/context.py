"""Gathering what Claude wakes up to for one turn, from the stores, for the pure assembler."""

import math
from datetime import datetime
from functools import lru_cache
from zoneinfo import ZoneInfo

from django.conf import settings
from django.db.models.functions import Length

from gem import decay
from gem.recalled import Recall
from gem.selectors import GemNow, Identities, decay_pressure, working_memory_scores
from gem.state import CHARS_PER_TOKEN, PENDING_RECALL, WORKING_MEMORY_FILL, state_get_many
from heart.assemble import (
    SECTION_GAP,
    SUMMARIES,
    Assembly,
    Budgets,
    ConversationLine,
    LingeringItem,
    SummaryItem,
    assemble,
    recent_oldest_event,
)
from heart.models import Event
from heart.parse import MARKUP, parse, tidy
from lens.search import search_recalled
from mirror.merge import Span, summaries_for_context
from mirror.models import Summary
from silentstar.tokens import DEFAULT_CHARS_PER_TOKEN, estimate_tokens, tokens_for_characters

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


def _recent_events(*, before: int, chars_wanted: int) -> list[tuple[int, datetime, str, str]]:
    """The newest events before an id, oldest first, enough to fill the pools twice over.

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
    return events[::-1]


_recent_pages_last = {"pages": 1}  # how many pages the last read took, in this process


def _entry_tokens(level: str, first: int, last: int, characters: int, budgets: Budgets) -> int:
    """About what a summary's entry takes of the Summaries budget: its title line, its text and
    the blank line before it (the assembler's guard against headings may add a few characters)."""
    title = f"### {level}, events {first}-{last}\n"
    return tokens_for_characters(len(SECTION_GAP + title) + characters, budgets.chars_per_token)


def context_for_event(*, event: Event, now: datetime, current_turn: int, gem: GemNow) -> Assembly:
    """The assembled context for answering ``event`` at ``now``, from ``gem`` as read for it."""
    # One read of the turn's small values, the last turn's working-memory fill among them.
    state = state_get_many(
        {CHARS_PER_TOKEN: DEFAULT_CHARS_PER_TOKEN, PENDING_RECALL: [], WORKING_MEMORY_FILL: 0.0}
    )
    budgets = budgets_from_settings(chars_per_token=state[CHARS_PER_TOKEN])
    pools = budgets.pool_user + budgets.pool_say + budgets.pool_do + budgets.pool_flex
    earlier = _recent_events(before=event.pk, chars_wanted=2 * 4 * pools)
    rows = gem.working_memory
    scores = working_memory_scores(
        rows,
        now=now,
        current_turn=current_turn,
        pressure=decay_pressure(state[WORKING_MEMORY_FILL]),
    )
    lingering = [  # in no particular order: the assembler chooses by score
        LingeringItem(row.id, row.type, row.content, row.subject, score, row.due)
        for row, score in zip(rows, scores, strict=True)
        if decay.is_surfacing(score)
    ]
    pending = state[PENDING_RECALL]
    recalls = [Recall(r["key"], r["deep"]) for r in pending if "key" in r]
    searches = [r["search"] for r in pending if "search" in r]
    recalled = gem.recalled(recalls) + search_recalled(searches, before_event=event.pk)
    conversation = conversation_lines(earlier, who=gem.identities)
    local_now = now.astimezone(ZoneInfo(settings.TIME_ZONE))
    spans = [
        Span(pk, level, first, last, _entry_tokens(level, first, last, chars, budgets))
        for pk, level, first, last, chars in Summary.objects.filter(
            superseded_by__isnull=True, first_event_id__lt=event.pk
        )
        .annotate(chars=Length("content"))
        .values_list("id", "level", "first_event_id", "last_event_id", "chars")
    ]

    summaries: list[SummaryItem] = []
    if spans:
        # Summaries stand for what is older than the Recent window; the window does not depend
        # on the summaries, so it is found first and the summaries are chosen behind it.
        oldest = recent_oldest_event(conversation, budgets)
        chosen = summaries_for_context(
            spans,
            before=event.pk if oldest is None else oldest,
            budget=budgets.summaries - estimate_tokens(SUMMARIES, budgets.chars_per_token),
        )
        contents = dict(
            Summary.objects.filter(pk__in=[s.id for s in chosen]).values_list("id", "content")
        )
        summaries = [
            SummaryItem(s.id, s.level, s.first_event_id, s.last_event_id, contents[s.id])
            for s in chosen
        ]
    return assemble(
        wake=gem.wake_text,
        image_text=gem.image_text if event.image else None,
        ambient=gem.ambient_prose,
        lingering=lingering,
        summaries=summaries,
        recalled=recalled,
        conversation=conversation,
        now=local_now,
        last_message_at=earlier[-1][1].astimezone(local_now.tzinfo) if earlier else None,
        message=event.content,
        actor=event.actor,
        budgets=budgets,
    )
