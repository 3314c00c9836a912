"""Corrections of the log: the one place they are written, whoever makes them.

A correction is appended beside the event it corrects (``events.models.Correction``); the
event never changes, and readers follow the view the corrections give it
(``events.corrected``). Writing one also writes again the search index's rows that hold what
the event says (``lens.reindex``), in the same transaction.
"""

from django.db import IntegrityError, transaction

from events.corrected import ATTRIBUTION, EDIT, KINDS, RESTORATION, RETRACTION, View, corrected
from events.models import Correction, Event, Turn, TurnStatus
from gem.selectors import identities_current
from heart.forms import MESSAGE_MAX_CHARS
from lens.reindex import event_rows_rewritten
from silentstar.router import store_for

ANSWERING = (TurnStatus.QUEUED, TurnStatus.RUNNING)


class CorrectionError(ValueError):
    """A correction that cannot be made, said in words a person reads."""


def correction_make(
    *, event_id: int, kind: str, made_by: str, text: str = "", actor: str = ""
) -> Correction:
    """Append a correction of ``event_id``: an ``edit`` to ``text``, an ``attribution`` to
    ``actor`` (another identity of the same side), a ``retraction`` or a ``restoration``.
    Refused in words (``CorrectionError``) when the message is unknown, still being answered,
    already so, or corrected by someone else meanwhile; nothing is written then."""
    if kind not in KINDS:
        raise CorrectionError(
            f"“{kind}” is no correction: edit, attribution, retraction or restoration."
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
    _refusal(view, event, kind=kind, text=text, actor=actor)
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
            event_rows_rewritten(event_id)
    except IntegrityError:
        raise CorrectionError(
            f"Message #{event_id} was corrected by someone else meanwhile: look at it again."
        ) from None
    return correction


def _side(event: Event) -> str:
    """``companion`` for a reply or an identity of the companion's, else ``user``."""
    if event.actor in identities_current().companions:
        return "companion"
    return "companion" if Turn.objects.filter(reply_event_id=event.pk).exists() else "user"


def _refusal(view: View, event: Event, *, kind: str, text: str, actor: str) -> None:
    event_id = event.pk
    if kind == RESTORATION:
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
        who = identities_current()
        if actor not in who.sides:
            raise CorrectionError(f"There is no identity “{actor}”.")
        side = _side(event)
        if who.sides[actor] != side:
            whose = "the companion's" if side == "companion" else "the person's"
            raise CorrectionError(
                f"Message #{event_id} is {whose}: it can be given to another of {whose} "
                f"identities only, and “{actor}” is not one."
            )
        if actor == view.actor:
            raise CorrectionError(f"Message #{event_id} is already {actor}'s.")
