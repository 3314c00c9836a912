"""Corrections of the log: the one place they are written, whoever makes them.

A correction is appended beside the event it corrects (``events.models.Correction``); the
event never changes, and readers follow the view the corrections give it
(``events.corrected``). Writing one also writes again the search index's rows that hold what
the event says (``lens.reindex``), in the same transaction, and then working memory follows
what the message now says, through the Gem's services:

- the items its words wrote and no longer say (all of them when it is retracted) are dropped,
  with the correction as the reason; the items it resolved, cancelled or dropped, when it no
  longer says so, are active again;
- the items its new words say are written by the creation policy, as a new message's are;
- given to another identity, what it wrote is that identity's;
- an item a person has changed since (its words or its importance) is never undone: it is
  listed (``CorrectionMade.kept``) for the person to decide.
"""

from dataclasses import dataclass, field

from django.conf import settings
from django.core.files.storage import default_storage
from django.db import IntegrityError, connections, transaction
from django.db.models import Q
from django.utils import timezone
from django_q.tasks import async_task

from events.corrected import (
    ASIDE,
    ATTRIBUTION,
    CHOSEN,
    DONE,
    EDIT,
    KINDS,
    RESTORATION,
    RETRACTION,
    View,
    corrected,
)
from events.models import Correction, Event, Purge, Turn, TurnStatus
from events.parse import KnowledgeItem, parse
from events.render import copied_forms, whole_words
from events.selectors import views_of
from gem.models import IngestRecord, WorkingMemory, WorkingMemoryStatus
from gem.selectors import Identities, identities_current
from gem.services import working_memory_blank, working_memory_status_set, working_memory_update
from gem.state import turn_counter_current
from heart.forms import MESSAGE_MAX_CHARS
from heart.ingest import working_memory_take_up
from heart.models import ContextSnapshot
from lens.reindex import event_rows_rewritten
from mirror.models import Summary
from silentstar.router import store_for

ANSWERING = (TurnStatus.QUEUED, TurnStatus.RUNNING)


class CorrectionError(ValueError):
    """A correction that cannot be made, said in words a person reads."""


@dataclass(frozen=True)
class CorrectionMade:
    """A correction and what working memory did to follow it (item ids)."""

    correction: Correction
    dropped: list[int] = field(default_factory=list)  # written by the words it no longer says
    reopened: list[int] = field(default_factory=list)  # resolved by words it no longer says
    written: list[int] = field(default_factory=list)  # by its new words
    moved: list[int] = field(default_factory=list)  # given to the identity it was given to
    kept: list[int] = field(default_factory=list)  # changed by a person since: theirs to decide


def correction_make(
    *,
    event_id: int,
    kind: str,
    made_by: str,
    text: str = "",
    actor: str = "",
    user_id: int | None = None,
) -> CorrectionMade:
    """Append a correction of ``event_id``: an ``edit`` to ``text``, an ``attribution`` to
    ``actor`` (another identity of the same side), a ``retraction`` or a ``restoration``.
    Refused in words (``CorrectionError``) when the message is unknown, still being answered,
    already so, or corrected by someone else meanwhile; nothing is written then. ``user_id``:
    the person's account, for the admin log of what working memory did."""
    if kind not in KINDS:
        raise CorrectionError(
            f"“{kind}” is no correction: edit, attribution, retraction, restoration, aside or "
            "chosen."
        )
    event = Event.objects.filter(pk=event_id).only("pk", "actor", "content").first()
    if event is None:
        raise CorrectionError(f"There is no message #{event_id} in the log.")
    if Turn.objects.filter(event_id=event_id, status__in=ANSWERING).exists():
        raise CorrectionError(
            f"Message #{event_id} is still being answered: correct it once the reply is in."
        )
    made = list(Correction.objects.filter(event_id=event_id).order_by("id"))
    view = corrected(event.content, event.actor, [correction.step for correction in made])
    who = identities_current()  # read once for the checks and what working memory does
    _refusal(view, event, kind=kind, text=text, actor=actor, who=who)
    try:
        with transaction.atomic(using=store_for("events")):
            correction = Correction.objects.create(
                event_id=event_id,
                sequence=len(made),
                kind=kind,
                text=text if kind == EDIT else "",
                actor=actor if kind == ATTRIBUTION else "",
                made_by=made_by,
            )
            around = event_rows_rewritten(event_id)
    except IntegrityError:
        raise CorrectionError(
            f"Message #{event_id} was corrected by someone else meanwhile: look at it again."
        ) from None
    if settings.SEARCH_SEMANTIC:  # the vectors lens.reindex removed, written again
        async_task("lens.tasks.vectors_fill_range_task", *around, group="search")
    after = corrected(event.content, event.actor, [*(c.step for c in made), correction.step])
    return _working_memory_follows(event, view, after, correction, user_id=user_id, who=who)


def _working_memory_follows(
    event: Event,
    before: View,
    after: View,
    correction: Correction,
    *,
    user_id: int | None,
    who: Identities,
) -> CorrectionMade:
    now = timezone.now()
    reason = f"message #{event.pk} {DONE[correction.kind]} (correction #{correction.pk})"
    said, says = _knowledge(before, who), _knowledge(after, who)
    gone = {(item.kind, item.text) for item in said if item not in says and not item.lifecycle}
    written_by_it = list(
        WorkingMemory.objects.filter(event_id=event.pk, status=WorkingMemoryStatus.ACTIVE)
        .order_by("pk")
        .only("pk", "type", "content", "importance_edited")
    )
    as_said = {(item.kind, item.text) for item in said}
    theirs = [
        item
        for item in written_by_it
        if (item.type, item.content) in as_said and not item.importance_edited
    ]
    kept = [item.pk for item in written_by_it if item not in theirs]
    dropped = working_memory_status_set(
        item_ids=[item.pk for item in theirs if (item.type, item.content) in gone],
        status=WorkingMemoryStatus.DROPPED,
        reason=reason,
        now=now,
        user_id=user_id,
    )
    reopened = []
    if any(item.lifecycle for item in said if item not in says):
        reopened = _reopened(event, reason=reason, now=now, user_id=user_id)
    moved = []
    if after.actor != before.actor:
        for item in theirs:
            if item.pk not in dropped:
                working_memory_update(item_id=item.pk, at=now, actor=after.actor, user_id=user_id)
                moved.append(item.pk)
    new = [item for item in says if item not in said]
    taken = working_memory_take_up(
        new,
        event=Event(pk=event.pk, ts=event.ts, actor=after.actor, content=after.content),
        side=_side(event, who),
        turn=turn_counter_current(),
    )
    return CorrectionMade(
        correction=correction,
        dropped=dropped,
        reopened=reopened,
        written=[*taken.created, *taken.refreshed],
        moved=moved,
        kept=kept,
    )


def _knowledge(view: View, who: Identities) -> list[KnowledgeItem]:
    """What the message says to working memory as corrected: nothing once retracted."""
    if view.retracted:
        return []
    return list(parse(view.content, identities=who.names).knowledge)


def _reopened(event: Event, *, reason: str, now, user_id: int | None) -> list[int]:
    """The items the message resolved, cancelled or dropped, and nothing has moved since, made
    active again."""
    record = IngestRecord.objects.filter(event_id=event.pk).first()
    ids = (record.changes or {}).get("resolved", []) if record else []
    closed_by_it = WorkingMemory.objects.filter(pk__in=ids, resolved_at=event.ts)
    return working_memory_status_set(
        item_ids=list(closed_by_it.values_list("pk", flat=True)),
        status=WorkingMemoryStatus.ACTIVE,
        reason=reason,
        now=now,
        user_id=user_id,
    )


def _side(event: Event, who: Identities) -> str:
    """``companion`` for a reply or an identity of the companion's, else ``user``."""
    if event.actor in who.companions:
        return "companion"
    return "companion" if Turn.objects.filter(reply_event_id=event.pk).exists() else "user"


def _refusal(
    view: View, event: Event, *, kind: str, text: str, actor: str, who: Identities
) -> None:
    event_id = event.pk
    if kind in (ASIDE, CHOSEN) and not Turn.objects.filter(reply_event_id=event_id).exists():
        raise CorrectionError(f"Message #{event_id} is no reply: only a reply is chosen or not.")
    if kind == CHOSEN:
        if not view.aside:
            raise CorrectionError(f"Reply #{event_id} is not set aside: it counts already.")
        return
    if kind == RESTORATION:
        if view.aside:
            raise CorrectionError(
                f"Reply #{event_id} was set aside for another reply: choose it instead."
            )
        if not view.retracted:
            raise CorrectionError(f"Message #{event_id} is not retracted: nothing to restore.")
        return
    if view.retracted:
        raise CorrectionError(f"Message #{event_id} is retracted: restore it first.")
    if kind == RETRACTION:
        return
    if kind == EDIT:
        if not text.strip():
            raise CorrectionError("An edit needs text: to take a message back, retract it.")
        if len(text) > MESSAGE_MAX_CHARS:
            raise CorrectionError(
                f"An edit can hold {MESSAGE_MAX_CHARS:,} characters at most; "
                f"this one has {len(text):,}."
            )
        if text == view.content:
            raise CorrectionError(f"Message #{event_id} already says that.")
        return
    if kind == ATTRIBUTION:
        if actor not in who.sides:
            raise CorrectionError(f"There is no identity “{actor}”.")
        side = _side(event, who)
        if who.sides[actor] != side:
            whose = "the companion's" if side == "companion" else "the person's"
            raise CorrectionError(
                f"Message #{event_id} is {whose}: it can be given to another of {whose} "
                f"identities only, and “{actor}” is not one."
            )
        if actor == view.actor:
            raise CorrectionError(f"Message #{event_id} is already {actor}'s.")


# --- Purge ---------------------------------------------------------------------------------------

PURGED = "[purged]"


def purge_reach(event_id: int) -> dict[str, int]:
    """Where purging ``event_id`` would blank its text, copies counted by place (nothing is
    written): the confirmation shows it."""
    event, texts = _purged_said(event_id)
    return _copies(event, texts, write=False)


def event_purge(*, event_id: int, purged_by: str) -> Purge:
    """Blank a retracted message's text and image in the log, the text of its corrections and
    the same text wherever it was copied: the search index, its turn's partial reply, the
    context snapshots, the summaries and the working memory written from it. The one exception
    to the append-only log, itself recorded (``Purge``: what, when, who). Refused in words for
    an unknown message, one not taken back, or one purged already. Backups made before, and
    working memory already moved to the archive, keep the text."""
    event, texts = _purged_said(event_id)
    image = event.image.name
    with transaction.atomic(using=store_for("events")):
        copies = _copies(event, texts, write=False)
        try:
            with transaction.atomic(using=store_for("events")):
                purge = Purge.objects.create(event=event, purged_by=purged_by, blanked=copies)
        except IntegrityError:
            raise CorrectionError(f"Message #{event_id} is purged already.") from None
        with connections[store_for("events")].cursor() as cursor:
            cursor.execute(
                "UPDATE heart_event SET content = '', image = '' WHERE id = %s", [event_id]
            )
            cursor.execute(
                "UPDATE events_correction SET text = '' WHERE event_id = %s AND text <> ''",
                [event_id],
            )
            cursor.execute(
                "UPDATE heart_turn SET partial_text = '' WHERE (event_id = %s "
                "OR reply_event_id = %s) AND partial_text <> ''",
                [event_id, event_id],
            )
        event_rows_rewritten(event_id)
    _copies(event, texts, write=True)
    if image:
        default_storage.delete(image)
    return purge


def _purged_said(event_id: int) -> tuple[Event, list[str]]:
    """The event to purge, and what it said (raw and each edit) as copies of it may hold it
    (``events.render.copied_forms``)."""
    event = Event.objects.filter(pk=event_id).first()
    if event is None:
        raise CorrectionError(f"There is no message #{event_id} in the log.")
    if Purge.objects.filter(event_id=event_id).exists():
        raise CorrectionError(f"Message #{event_id} is purged already.")
    made = list(Correction.objects.filter(event_id=event_id).order_by("id"))
    if not corrected(event.content, event.actor, [c.step for c in made]).retracted:
        raise CorrectionError(
            f"Message #{event_id} is not taken back: take it back first, then purge it."
        )
    said = [event.content, *(c.text for c in made if c.kind == EDIT)]
    sides = identities_current().sides
    return event, copied_forms([(event.actor, text) for text in said], sides)


def _copies(event: Event, texts: list[str], *, write: bool) -> dict[str, int]:
    """Count (or, with ``write``, blank) the copies of ``texts`` outside the log, and the
    working memory written from ``event``."""
    items = list(WorkingMemory.objects.filter(event_id=event.pk).values_list("pk", flat=True))
    copies = {"snapshots": 0, "summaries": 0, "working_memory": len(items)}
    if write:
        working_memory_blank(item_ids=items, text=PURGED)
    pattern = whole_words(texts)
    if pattern is None:
        return copies
    for model, fields, place in (
        (ContextSnapshot, ("assembled_system", "assembled_user"), "snapshots"),
        (Summary, ("content",), "summaries"),
    ):
        words = Q()
        for text in texts:
            for name in fields:
                words |= Q(**{f"{name}__contains": text})
        for row in model.objects.filter(words).only("pk", *fields):
            copies[place] += 1
            if write:
                changed = {name: pattern.sub(PURGED, getattr(row, name)) for name in fields}
                model.objects.filter(pk=row.pk).update(**changed)
    return copies


# --- The replies to one message ------------------------------------------------------------------


def reply_choose(*, turn_id: int, made_by: str, user_id: int | None = None) -> list[CorrectionMade]:
    """Make the reply of ``turn_id`` the one that counts among the replies to its message: it is
    chosen again if it was set aside, and every other reply that counts is set aside, each a
    correction (so working memory, the search and the summaries follow, as for any). Refused in
    words for a turn with no reply, or a reply taken back."""
    turn = Turn.objects.filter(pk=turn_id).first()
    if turn is None or turn.reply_event_id is None or turn.event_id is None:
        raise CorrectionError(f"Turn {turn_id} has no reply to choose.")
    replies = list(
        Turn.objects.filter(event_id=turn.event_id, reply_event__isnull=False)
        .order_by("pk")
        .values_list("reply_event_id", flat=True)
    )
    rows = Event.objects.filter(pk__in=replies).values_list("pk", "actor", "content")
    views = views_of(rows)
    chosen = views[turn.reply_event_id]
    if chosen.taken_back:
        raise CorrectionError(
            f"Reply #{turn.reply_event_id} was taken back: restore it before choosing it."
        )
    made = []
    if chosen.aside:
        made.append(
            correction_make(
                event_id=turn.reply_event_id, kind=CHOSEN, made_by=made_by, user_id=user_id
            )
        )
    for reply in replies:
        if reply != turn.reply_event_id and not views[reply].retracted:
            made.append(
                correction_make(event_id=reply, kind=ASIDE, made_by=made_by, user_id=user_id)
            )
    return made
