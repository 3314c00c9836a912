"""Gathering what Claude wakes up to for one turn, from the stores, for the pure assembler."""

from datetime import datetime
from zoneinfo import ZoneInfo

from django.conf import settings

from gem.recall import recall_items
from gem.selectors import (
    ambient_prose_current,
    companion_names,
    wake_text_current,
    working_memory_scored,
)
from gem.state import PENDING_RECALL, state_get
from heart.assemble import (
    Assembly,
    Budgets,
    ConversationLine,
    LingeringItem,
    SummaryItem,
    assemble,
)
from heart.models import Event
from heart.parse import MARKUP, Recall, parse
from mirror.models import Summary

# Enough history for the conversation pools (5,000 tokens) even of very short messages.
RECENT_EVENTS_READ = 400
POOL_OF = {"say": "say", "do": "do", "narrate": "do"}


def budgets_from_settings() -> Budgets:
    return Budgets(
        working_memory=settings.BUDGET_WORKING_MEMORY,
        recall=settings.BUDGET_RECALL,
        summaries=settings.BUDGET_SUMMARIES,
        pool_user=settings.BUDGET_POOL_USER,
        pool_say=settings.BUDGET_POOL_SAY,
        pool_do=settings.BUDGET_POOL_DO,
        pool_flex=settings.BUDGET_POOL_FLEX,
    )


def conversation_lines(events: list[Event], *, identities: list[str]) -> list[ConversationLine]:
    """Display text of events, oldest first: a person's whole message, the companion's segments."""
    companions = companion_names()
    lines = []
    for event in events:
        parsed = parse(event.content, identities=identities)
        if event.actor in companions:
            lines.extend(
                ConversationLine(event.pk, event.ts, event.actor, POOL_OF[s.kind], s.text)
                for s in parsed.segments
            )
        else:
            said = " ".join("".join(s.text for s in parsed.spans if s.role != MARKUP).split())
            if said:
                lines.append(ConversationLine(event.pk, event.ts, event.actor, "user", said))
    return lines


def context_for_event(
    *, event: Event, now: datetime, current_turn: int, identities: list[str]
) -> Assembly:
    """The assembled context for answering ``event`` at ``now``."""
    earlier = list(Event.objects.filter(pk__lt=event.pk).order_by("-pk")[:RECENT_EVENTS_READ])[::-1]
    lingering = [
        LingeringItem(item.pk, item.type, item.content, item.subject, score, item.due)
        for item, score in working_memory_scored(now=now, current_turn=current_turn)
    ]
    summaries = [
        SummaryItem(s.pk, s.level, s.first_event_id, s.last_event_id, s.content)
        for s in Summary.objects.filter(
            superseded_by__isnull=True, last_event_id__lt=event.pk
        ).order_by("last_event_id", "pk")
    ]
    pending = [Recall(r["key"], r["deep"]) for r in state_get(PENDING_RECALL, [])]
    local_now = now.astimezone(ZoneInfo(settings.TIME_ZONE))
    return assemble(
        wake=wake_text_current("wake"),
        image_text=wake_text_current("image") if event.image else None,
        ambient=ambient_prose_current(),
        lingering=lingering,
        summaries=summaries,
        recalled=recall_items(pending),
        conversation=conversation_lines(earlier, identities=identities),
        now=local_now,
        last_message_at=earlier[-1].ts.astimezone(local_now.tzinfo) if earlier else None,
        message=event.content,
        actor=event.actor,
        budgets=budgets_from_settings(),
    )
