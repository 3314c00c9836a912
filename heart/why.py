""" "Why didn't she know X?": for the last turns, whether X was in the context, and if not, why.

X is a working-memory item (``#12`` or ``12``), a fragment key, or some words. The answer for a
turn is one of four, read from its snapshot (what was included, what was left out and why) and
the stores, without running anything again:

- ``in the context``: where, and with what score or tier;
- ``cut by the budget``: eligible, but the section was full (at which rank, by how many tokens),
  or an event older than Recent's window (the conversation's budget);
- ``not eligible``: stored, but not a candidate (not active, under the 0.01 floor, a fragment
  nobody recalled);
- ``never stored``: nothing holds it, or not yet at that turn.

Words are looked for as a phrase, letter case aside, in the text Claude received; then in
working memory, fragments and the event log, both as a phrase and with the Lens's own search
(``lens.search.search``, its words only), so what the Lens finds for the words is never "never
stored".
"""

from dataclasses import dataclass
from datetime import datetime
from functools import partial

from django.db.models import Q

from events.models import Event, Turn
from gem.models import Fragment, WorkingMemory
from heart.assemble import NEAR_MISSES
from heart.context import ContextInputs
from heart.inspect import (
    assembled_when,
    budget_sentence,
    lingering_left_reason,
    not_recalled,
    sections_of,
)
from heart.models import ContextSnapshot
from lens.search import SearchError, search
from mirror.models import Summary

IN_CONTEXT = "in the context"
CUT = "cut by the budget"
NOT_ELIGIBLE = "not eligible"
NEVER_STORED = "never stored"
ANSWERS = (IN_CONTEXT, CUT, NOT_ELIGIBLE, NEVER_STORED)  # the most present first
TURNS_DEFAULT = 10
TURNS_MAX = 200


class WhyError(ValueError):
    """The question cannot be asked as put (empty, or a turn count out of range)."""


@dataclass(frozen=True)
class Verdict:
    turn: int  # the Turn's id
    number: int  # the turn counter
    at: datetime
    answer: str  # one of ANSWERS
    reason: str


@dataclass(frozen=True)
class Why:
    asked: str
    what: str  # what X was taken to be, in words
    verdicts: list[Verdict]


def why(asked: str, *, turns: int = TURNS_DEFAULT) -> Why:
    """The verdict on ``asked`` for each of the last ``turns`` turns that kept a snapshot, the
    newest first."""
    asked = " ".join(asked.split())
    if not asked:
        raise WhyError("Ask about a working-memory item (#12), a fragment key or some words.")
    if not 1 <= turns <= TURNS_MAX:
        raise WhyError(f"The number of turns must be from 1 to {TURNS_MAX}, not {turns}.")
    snapshots = list(ContextSnapshot.objects.order_by("-turn", "-id")[:turns])
    judged = {s.turn: s for s in snapshots}  # a retried turn keeps its latest snapshot
    turn_rows = list(Turn.objects.filter(pk__in=judged).values_list("pk", "number", "event_id"))
    numbers = {pk: number for pk, number, _ in turn_rows}
    item_id = asked.removeprefix("#")
    if item_id.isdigit():
        item = WorkingMemory.objects.filter(pk=int(item_id)).first()
        what = f"working memory #{item_id}" + (f" ({item.type}: {item.content})" if item else "")
        verdict = partial(_item_verdict, item, int(item_id))
    elif fragment := Fragment.objects.filter(key__iexact=asked).first():
        what = f"the fragment [{fragment.key}]"
        verdict = partial(_fragment_verdict, fragment)
    else:
        what = f"the words “{asked}”"
        hits = _lens_hits(asked)
        items = WorkingMemory.objects.filter(
            Q(content__icontains=asked) | Q(pk__in=[hit.id for hit in hits if hit.kind == "wm"])
        )
        fragments = Fragment.objects.filter(
            _fragment_holds(asked) | Q(pk__in=[hit.key for hit in hits if hit.kind == "fragment"])
        )
        verdict = partial(
            _words_verdict,
            asked,
            list(items[:5]),
            list(fragments[:5]),
            {pk: event_id for pk, _, event_id in turn_rows},
            [hit.id for hit in hits if hit.kind == "event" and not hit.beside],
        )
    verdicts = []
    for snapshot in judged.values():
        answer, reason = verdict(snapshot)
        verdicts.append(
            Verdict(snapshot.turn, numbers.get(snapshot.turn, 0), snapshot.ts, answer, reason)
        )
    return Why(asked, what, verdicts)


def _inputs(snapshot: ContextSnapshot) -> ContextInputs | None:
    return ContextInputs.from_json(snapshot.inputs) if snapshot.inputs else None


def _lingering_left(snapshot: ContextSnapshot) -> dict[int, dict]:
    left = snapshot.items_included.get("left_out", {}).get("lingering", [])
    return {item["id"]: item for item in left}


def _item_verdict(item: WorkingMemory | None, item_id: int, snapshot) -> tuple[str, str]:
    if item is None:
        return NEVER_STORED, f"No working-memory item #{item_id} exists."
    included = snapshot.items_included
    scores = {int(key): value for key, value in included.get("lingering_scores", {}).items()}
    if item.pk in included.get("lingering", []):
        score = f" (score {scores[item.pk]:.3f})" if item.pk in scores else ""
        return IN_CONTEXT, f"In Lingering{score}."
    left = _lingering_left(snapshot).get(item.pk)
    if left:
        reason = lingering_left_reason(left, item, *assembled_when(snapshot))
        if left["reason"] == "faded":
            return NOT_ELIGIBLE, f"Left out of Lingering: {reason}."
        return CUT, f"Left out of Lingering: {reason}; score {left['score']:.3f}."
    if item.pk in included.get("left_out", {}).get("lingering_further", []):
        return CUT, (
            "Left out of Lingering: cut by the budget, lower in the ranking than the "
            f"{NEAR_MISSES} items the snapshot names with their rank."
        )
    inputs = _inputs(snapshot)
    if inputs is None or "left_out" not in included:
        return NOT_ELIGIBLE, "Not in Lingering; this older snapshot does not say why."
    if (item.event_id or 0) > inputs.event_id or (item.turn or 0) > inputs.turn:
        return NEVER_STORED, "Not stored yet at this turn: it was written later."
    if item.status != "active":
        return NOT_ELIGIBLE, f"Not active at this turn (now {item.get_status_display()})."
    return NOT_ELIGIBLE, "Not active at this turn."


def _fragment_verdict(fragment: Fragment, snapshot) -> tuple[str, str]:
    included = snapshot.items_included
    if fragment.key in included.get("recalled", []):
        woken = included.get("recalled_why", {}).get(fragment.key)
        return IN_CONTEXT, f"In Recalled: {woken or 'the reply before asked for it'}."
    for left in included.get("left_out", {}).get("recalled", []):
        if left["key"] == fragment.key:
            reason = budget_sentence(left["rank"], left["tokens"], left["room"])
            return CUT, f"Recalled, but {reason}."
    reason = not_recalled(named=f"[{fragment.key}]" in snapshot.assembled_system)
    return NOT_ELIGIBLE, f"{reason[0].upper()}{reason[1:]}."


LENS_HITS = 20  # what the Lens finds for the words, read once for every turn


def _lens_hits(words: str) -> list:
    """What the Lens's search finds for ``words``, by its words only (none when it has none)."""
    try:
        return search(words, limit=LENS_HITS, words_only=True)
    except SearchError:
        return []


def _words_verdict(
    words: str,
    items: list[WorkingMemory],
    fragments: list[Fragment],
    event_ids: dict[int, int],
    found_events: list[int],
    snapshot,
) -> tuple[str, str]:
    """The most present verdict among what holds ``words``: ``items`` and ``fragments`` (read
    once for every turn), the newest event said before the turn's message that holds them as
    a phrase, and the best the Lens finds for them (``found_events``, best first)."""
    found = _section_holding(words, snapshot)
    if found:
        return IN_CONTEXT, f"In {found}."
    inputs = _inputs(snapshot)
    before = inputs.event_id if inputs else event_ids[snapshot.turn]
    verdicts = [
        (_item_verdict(item, item.pk, snapshot), f"working memory #{item.pk}") for item in items
    ]
    verdicts += [
        (_fragment_verdict(fragment, snapshot), f"the fragment [{fragment.key}]")
        for fragment in fragments
    ]
    event = Event.objects.filter(pk__lt=before, content__icontains=words).order_by("-pk").first()
    if event is not None:
        verdicts.append((_event_verdict(event.pk, snapshot), f"event #{event.pk}"))
    if found := next((event_id for event_id in found_events if event_id < before), None):
        verdicts.append((_event_verdict(found, snapshot), f"event #{found}, found by the Lens"))
    if not verdicts:
        return NEVER_STORED, "Nothing stored holds these words."
    (answer, reason), where = min(verdicts, key=lambda v: ANSWERS.index(v[0][0]))
    return answer, f"Held by {where}: {reason}"


def _section_holding(words: str, snapshot) -> str | None:
    needle = words.casefold()
    if needle in snapshot.assembled_system.casefold():
        return "the system prompt"
    for name, text in sections_of(snapshot.assembled_user).items():
        if needle in text.partition("\n")[2].casefold():  # below the section's heading
            return name
    return None


def _fragment_holds(words: str) -> Q:
    return (
        Q(ambient__icontains=words)
        | Q(recognition__icontains=words)
        | Q(inventory__icontains=words)
        | Q(key__icontains=words)
    )


def _event_verdict(event_id: int, snapshot) -> tuple[str, str]:
    included = snapshot.items_included
    if any(event_id in ids for ids in (included.get("recent") or {}).values()):
        return IN_CONTEXT, "In Recent."
    if f"event:{event_id}" in included.get("found", []):
        return IN_CONTEXT, "In Found: old conversation found for the message."
    window = included.get("recent_window", {})
    start = window.get("first_event")
    summary = (
        Summary.objects.filter(first_event_id__lte=event_id, last_event_id__gte=event_id)
        .filter(pk__in=included.get("summaries", []))
        .first()
    )
    where = f"; summary #{summary.pk} ({summary.level}) stands for it" if summary else ""
    if start is not None and event_id < start:
        return CUT, f"Said before Recent's window, which started at event #{start}{where}."
    return NOT_ELIGIBLE, f"Its words are not among those shown{where}."
