"""What the search page and ``manage.py lens search`` show of a hit: the text a person sees, not
the stored markup.

A turn shows what the chat page shows of it (``events.render``: no tags, no processing text such
as ``recall(…)`` or ``search(…)``), its passage cut from that with the query's words marked; the
turns around it likewise, whole. A fragment's passage is the tier that holds the words
(``Hit.tier``), a working-memory item's its content. A turn whose shown text holds none of the
words says what found it: the text it does not show (a thought, a recall), or the turns before
it (the index reads them with it).
"""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from events.render import emphasis_plain, message_display
from gem.selectors import identities_current
from lens.search import MARK_OPEN, Hit, Neighbour, passage_of


@dataclass(frozen=True, slots=True)
class ShownTurn:
    actor: str
    text: str


@dataclass(frozen=True, slots=True)
class ShownHit:
    hit: Hit
    passage: str  # the query's words between ``MARK_OPEN`` and ``MARK_CLOSE``
    before: tuple[ShownTurn, ...] = ()
    after: tuple[ShownTurn, ...] = ()
    found_by: str = ""  # a turn whose passage holds none of the words: what found it


def hits_display(hits: Sequence[Hit]) -> list[ShownHit]:
    """The hits as they are shown, the identities read once for all their turns."""
    sides = identities_current().sides if any(hit.kind == "event" for hit in hits) else {}
    return [_shown(hit, sides) for hit in hits]


def _shown(hit: Hit, sides: Mapping[str, str]) -> ShownHit:
    if hit.kind != "event":
        return ShownHit(hit=hit, passage=hit.snippet)

    def turns(around: Sequence[Neighbour]) -> tuple[ShownTurn, ...]:
        return tuple(ShownTurn(turn.actor, display_text(turn, sides)) for turn in around)

    text = display_text(Neighbour(hit.id, hit.ts, hit.actor, hit.text), sides)
    shown = passage_of(text, hit.words) if text else ""
    found_by = ""
    if MARK_OPEN not in shown:
        hidden = MARK_OPEN in passage_of(hit.text, hit.words)
        found_by = "what it does not show" if hidden else "the turns before it"
    return ShownHit(
        hit=hit, passage=shown, before=turns(hit.before), after=turns(hit.after), found_by=found_by
    )


def display_text(turn: Neighbour, sides: Mapping[str, str]) -> str:
    """What the chat page shows of a turn, on one line, its emphasis read plain (the page marks
    the query's words, and its own marks would read as theirs)."""
    message = message_display(
        event_id=turn.id, content=turn.text, actor=turn.actor, sides=sides, ts=turn.ts
    )
    return emphasis_plain(" ".join(" ".join(segment.text for segment in message.segments).split()))
