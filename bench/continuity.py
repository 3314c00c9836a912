"""``python -m bench continuity``: what the context of a turn keeps of a long real conversation.

One conversation of a dataset in the evaluation harness's format (``bench/evaluate.py``) is
written into the event log as it happens, in stores that hold nothing else, offline: the
conversation's first speaker is the person (``luna``, the message as written), the other the
companion (``claude``, the message in ``<say>``), with no ``<`` that could open a tag. The Mirror
runs as its schedule runs it (``mirror_run``, its trigger deciding) after every ``mirror_every``
turns and at the end of each session, with the time of the newest event; offline, it answers
with its extractive passes. A session is the turns whose ids share all but their last part
(``conv-26:D1:3`` is of session ``conv-26:D1``).

At the first turn of every session after the first (someone coming back days later), before
anything later exists, the context the Heart would build to answer that event is assembled
(``context_for_event``), and measured:

- holes: of the person's events from the oldest event the context reaches (a shown summary's
  first, the not-summarised line's first, or Recent's oldest) up to the probe, those in none of
  Recent, a shown summary's range or the not-summarised range;
- evidence kept: each distinct evidence turn of the single-hop, multi-hop and temporal questions
  whose evidence lies wholly before Recent's oldest event is kept when at least ``KEPT_SHARE`` of
  its content words are in the context's user text (a turn without content words is not
  counted). A conversation says the same words again and again, so beside it stands what the
  words of Recent's turns and the probe's own would keep with no summary at all (``by_recent``):
  the share kept by chance;
- reach: the share of the events before Recent that the shown summaries cover (for the probes
  with events before Recent).

Only what the product has long offered is used (``Event``, ``Summary``, ``mirror_run``,
``context_for_event``, ``gem_current``, the assembly's ``items_included`` and ``user_text``; the
not-summarised range is read with ``.get``), so the same module measures an older checkout.
"""

import re
import time
from collections.abc import Callable

from bench.evaluate import moment_aware
from events.models import Event
from gem.selectors import gem_current
from gem.words import STOP_WORDS
from heart.context import context_for_event
from mirror.models import Summary
from mirror.run import mirror_run

PERSON, COMPANION = "luna", "claude"
CATEGORIES = ("single-hop", "multi-hop", "temporal")
KEPT_SHARE = 0.6
_TAG_OPENING = re.compile(r"<(?=/|[^\W\d_])")  # a tag's name starts with a letter
_WORD = re.compile(r"[^\W_]+")


def content_words(text: str) -> set[str]:
    """Lowercased alphanumeric words longer than three characters, less the project's stop
    words (``gem.words``)."""
    return {w for w in _WORD.findall(text.lower()) if len(w) > 3 and w not in STOP_WORDS}


def untagged(text: str) -> str:
    """``text`` with a space after every ``<`` that could open a tag, so it forms none."""
    return _TAG_OPENING.sub("< ", text)


def session_of(turn_id: str) -> str:
    return turn_id.rsplit(":", 1)[0]


def conversation_measure(
    *,
    conversation: dict,
    questions: list[dict],
    mirror_every: int,
    progress: Callable[[int], None] = lambda _: None,
) -> dict:
    """Write ``conversation`` into the (empty) stores, probe each return, and count.

    ``questions`` are the dataset's questions about this conversation; ``progress`` is told of
    each turn written.
    """
    began = time.perf_counter()
    turns = conversation["turns"]
    first_speaker = turns[0]["speaker"]
    questions = [q for q in questions if q["category"] in CATEGORIES]
    event_of: dict[str, int] = {}  # turn id → event id
    written: list[tuple[int, str, str]] = []  # (event id, actor, the turn's text), oldest first
    figures = {
        "conversation": conversation["id"],
        "turns": len(turns),
        "probes": 0,
        "person_checked": 0,
        "holes": 0,
        "evidence_checked": 0,
        "evidence_kept": 0,
        "by_recent": 0,
        "reach_sum": 0.0,
        "reach_probes": 0,
        "hole_examples": [],
    }
    for n, turn in enumerate(turns):
        event = turn_written(turn, person=turn["speaker"] == first_speaker)
        event_of[turn["id"]] = event.pk
        written.append((event.pk, event.actor, turn["text"]))
        if n and session_of(turn["id"]) != session_of(turns[n - 1]["id"]):
            _probe(
                event,
                figures=figures,
                written=written,
                evidence=_evidence_before(questions, event_of=event_of, turns=turns),
            )
        mirror_when_due(turns, n, mirror_every=mirror_every, now=event.ts)
        progress(1)
    figures["events"] = len(written)
    figures["summaries"] = Summary.objects.count()
    figures["seconds"] = time.perf_counter() - began
    return figures


def turn_written(turn: dict, *, person: bool) -> Event:
    """A turn of the dataset written into the event log: the person's (``luna``) as written,
    the companion's (``claude``) in ``<say>``, neither able to form a tag."""
    text = untagged(turn["text"])
    return Event.objects.create(
        ts=moment_aware(turn["ts"]),
        actor=PERSON if person else COMPANION,
        content=text if person else f"<say>{text}</say>",
    )


def mirror_when_due(turns: list[dict], n: int, *, mirror_every: int, now) -> None:
    """The Mirror run, as its schedule runs it, after turn ``n``: every ``mirror_every`` turns
    and at the end of each session."""
    ends_session = n + 1 == len(turns) or session_of(turns[n + 1]["id"]) != session_of(
        turns[n]["id"]
    )
    if (n + 1) % mirror_every == 0 or ends_session:
        mirror_run(now=now)


def _evidence_before(
    questions: list[dict], *, event_of: dict[str, int], turns: list[dict]
) -> dict[int, set[str]]:
    """The evidence turns written so far, of questions whose evidence is all written: their
    event ids, each with its content words."""
    texts = {turn["id"]: turn["text"] for turn in turns}
    return {
        event_of[turn_id]: content_words(texts[turn_id])
        for question in questions
        if all(turn_id in event_of for turn_id in question["evidence"])
        for turn_id in question["evidence"]
    }


def _probe(
    event: Event,
    *,
    figures: dict,
    written: list[tuple[int, str, str]],
    evidence: dict[int, set[str]],
) -> None:
    """Assemble the context for ``event`` and add what it keeps to ``figures``."""
    assembly = context_for_event(
        event=event,
        now=event.ts,
        current_turn=sum(actor == PERSON for _, actor, _ in written),
        gem=gem_current(),
    )
    included = assembly.items_included
    recent = {i for ids in included["recent"].values() for i in ids}
    shown = list(
        Summary.objects.filter(pk__in=included["summaries"]).values_list(
            "first_event_id", "last_event_id"
        )
    )
    unsummarised = included.get("unsummarised")
    ranges = shown + ([tuple(unsummarised)] if unsummarised else [])
    reach = min([first for first, _ in ranges] + sorted(recent)[:1], default=event.pk)
    recent_first = min(recent, default=event.pk)
    figures["probes"] += 1

    # 1. Holes: the person's events within reach that the context shows nowhere.
    checked = [pk for pk, actor, _ in written if actor == PERSON and reach <= pk < event.pk]
    left_out = [
        pk
        for pk in checked
        if pk not in recent and not any(first <= pk <= last for first, last in ranges)
    ]
    figures["person_checked"] += len(checked)
    figures["holes"] += len(left_out)
    if left_out and len(figures["hole_examples"]) < 3:
        figures["hole_examples"].append(
            {
                "probe": event.pk,
                "left_out": left_out[:10],
                "summaries": shown,
                "unsummarised": unsummarised,
                "recent": [min(recent), max(recent)] if recent else None,
            }
        )

    # 2. Evidence from before Recent, found in the context's words.
    context = content_words(assembly.user_text)
    recent_words = content_words(
        " ".join(text for pk, _, text in written if pk in recent or pk == event.pk)
    )
    for pk, words in evidence.items():
        if pk < recent_first and words:
            figures["evidence_checked"] += 1
            figures["evidence_kept"] += len(words & context) >= KEPT_SHARE * len(words)
            figures["by_recent"] += len(words & recent_words) >= KEPT_SHARE * len(words)

    # 3. Reach: the events before Recent that the shown summaries cover.
    before = [pk for pk, _, _ in written if pk < recent_first]
    if before:
        covered = sum(any(first <= pk <= last for first, last in shown) for pk in before)
        figures["reach_sum"] += covered / len(before)
        figures["reach_probes"] += 1


def totals(results: list[dict]) -> dict:
    """The conversations' figures added up (shares over the sums, reach over all probes)."""
    keys = ("turns", "events", "summaries", "probes", "person_checked", "holes")
    keys += ("evidence_checked", "evidence_kept", "by_recent", "reach_sum", "reach_probes")
    keys += ("seconds",)
    return {"conversation": "total", **{key: sum(r[key] for r in results) for key in keys}}


def figures_lines(results: list[dict]) -> list[str]:
    """The table the command prints: one row per conversation, then the total."""
    lines = [
        f"{'conversation':<14} {'turns':>6} {'probes':>6} {'person':>7} {'holes':>6} "
        f"{'evidence':>8} {'kept':>5} {'share':>6} {'recent':>6} {'reach':>6} {'summaries':>9} "
        f"{'s':>6}"
    ]
    for row in [*results, totals(results)]:
        checked = row["evidence_checked"] or 1
        reach = row["reach_sum"] / row["reach_probes"] if row["reach_probes"] else 0
        lines.append(
            f"{row['conversation']:<14} {row['turns']:>6} {row['probes']:>6} "
            f"{row['person_checked']:>7} {row['holes']:>6} {row['evidence_checked']:>8} "
            f"{row['evidence_kept']:>5} {row['evidence_kept'] / checked:>6.3f} "
            f"{row['by_recent'] / checked:>6.3f} {reach:>6.3f} {row['summaries']:>9} "
            f"{row['seconds']:>6.1f}"
        )
    return lines
