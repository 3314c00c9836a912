"""Keeping the prompt cache warm while a conversation pauses (``SILENTSTAR_CACHE_KEEP_WARM``).

The cache keeps a prefix 5 minutes after it was last read. A pause a little longer than that
costs the next turn a write of the whole conversation (1.25× input) where a read (0.05× on Opus
5.5) would have done. With the setting on, a check every minute (``heart.tasks``) sends, once
the last read is ``WARM_AFTER`` old and before it expires, one bounded request: the last turn's
context up to its last breakpoint, assembled again exactly as it was sent, and a line asking for
no answer (one token at most). It is read from the cache, which refreshes it. It happens at most
``SILENTSTAR_CACHE_KEEP_WARM_TIMES`` times after a turn, never while a turn is waiting, and is
never logged as a turn; the ledger counts it under "heart-keep-warm". A local model server has
no such cache to keep: with one, nothing is sent.
"""

from datetime import datetime, timedelta

from django.conf import settings
from django.utils import timezone

from events.models import Turn, TurnStatus
from gem.state import CACHE_WARMED, state_get, state_set
from heart.models import ContextSnapshot
from heart.travel import assembled_again
from silentstar import claude

WARM_AFTER = timedelta(minutes=4)  # checked every minute: the read comes 4 to 5 minutes after
CACHE_LIFETIME = timedelta(minutes=5)
WARM_NOTE = "(A pause in the conversation: nothing needs an answer.)"


def cache_keep_warm(*, now: datetime | None = None) -> bool:
    """Read the last turn's cached context once, if the conversation pauses and it is time;
    whether a request was sent."""
    if not settings.CACHE_KEEP_WARM or settings.COMPANION_OFFLINE or settings.LOCAL_SERVER:
        return False
    now = now or timezone.now()
    if Turn.objects.filter(status__in=(TurnStatus.QUEUED, TurnStatus.RUNNING)).exists():
        return False  # the next turn reads the cache itself
    turn = (
        Turn.objects.filter(status=TurnStatus.DONE, reply_event__isnull=False)
        .select_related("event", "reply_event")
        .order_by("-pk")
        .first()
    )
    if turn is None:
        return False
    warmed = state_get(CACHE_WARMED, None) or {}
    same_turn = warmed.get("turn") == turn.pk
    times = warmed.get("times", 0) if same_turn else 0
    last_read = datetime.fromisoformat(warmed["at"]) if same_turn else turn.reply_event.ts
    if times >= settings.CACHE_KEEP_WARM_TIMES:
        return False
    if not WARM_AFTER <= now - last_read < CACHE_LIFETIME:
        return False
    held = _cached_prefix(turn)
    if held is None:
        return False
    system, user = held
    claude.complete(
        component="heart-keep-warm",
        system=system,
        messages=[{"role": "user", "content": [*user, {"type": "text", "text": WARM_NOTE}]}],
        offline_answer=str,
        max_tokens=1,
    )
    state_set(CACHE_WARMED, {"turn": turn.pk, "times": times + 1, "at": now.isoformat()})
    return True


def _cached_prefix(turn: Turn) -> tuple[list[dict], list[dict]] | None:
    """The system blocks and the user blocks up to the last breakpoint of the turn's context,
    as they were sent; None when they can no longer be made the same (something changed)."""
    snapshot = ContextSnapshot.objects.filter(turn=turn.pk).order_by("-id").first()
    if snapshot is None or not snapshot.inputs or turn.event is None:
        return None
    assembly = assembled_again(snapshot, event=turn.event)
    ends = [i for i, block in enumerate(assembly.user) if "cache_control" in block]
    if not ends or assembly.system_text != snapshot.assembled_system:
        return None
    held = assembly.user[: ends[-1] + 1]
    if not snapshot.assembled_user.startswith("".join(block["text"] for block in held)):
        return None
    return assembly.system, held
