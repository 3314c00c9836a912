from datetime import datetime

from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from gem.models import Identity
from gem.selectors import identities_current
from heart.services import (
    TurnOrderError,
    identity_default,
    turn_claim_next,
    turn_run,
    turn_submit,
    user_text_compose,
)
from heart.tasks import vectors_fill_queue


class Command(BaseCommand):
    help = "Run one full turn from the terminal and print the companion's visible reply."

    def add_arguments(self, parser):
        parser.add_argument("message", help="What the person says (tags allowed).")
        parser.add_argument(
            "--as",
            dest="identity",
            help="The identity speaking, e.g. luna (default: the one of the last message).",
        )
        parser.add_argument(
            "--tag",
            action="append",
            default=[],
            choices=["plan", "pin"],
            help="Wrap the message in a knowledge tag, as the chat page's buttons do.",
        )
        parser.add_argument(
            "--at",
            help="Run the turn as if at this moment (ISO 8601, owner's time zone if no offset).",
        )

    def handle(self, *args, message, identity, tag, at, **options):
        if identity and not Identity.objects.filter(name=identity, side="user").exists():
            names = ", ".join(Identity.objects.filter(side="user").values_list("name", flat=True))
            raise CommandError(f"No identity '{identity}' on the person's side; known: {names}")
        identity = identity or identity_default(identities_current()) or None
        moment = _moment(at) if at else None
        text = user_text_compose(message=message, identity=identity, knowledge_tags=tag)
        try:
            submitted = turn_submit(text=text, actor=identity or "", at=moment, enqueue=False)
        except TurnOrderError as error:
            raise CommandError(str(error)) from None
        turn = turn_claim_next()
        if turn is None or turn.pk != submitted.pk:
            raise CommandError(
                "Another turn is queued or running first; start the worker (scripts/run) "
                f"to let it finish. This message is stored as event {submitted.event_id}."
            )
        turn = turn_run(turn=turn)
        vectors_fill_queue()
        if turn.status == "error":
            raise CommandError(f"The turn failed: {turn.error}")
        self.stdout.write(turn.partial_text or "(no display tags: a secret reply, nothing shown)")


def _moment(raw: str) -> datetime:
    try:
        moment = datetime.fromisoformat(raw)
    except ValueError:
        raise CommandError(
            f"--at must be an ISO 8601 time like 2026-03-01T18:00, got {raw!r}"
        ) from None
    return timezone.make_aware(moment) if timezone.is_naive(moment) else moment
