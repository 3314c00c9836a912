"""Old conversation found for the person's message, for the same turn's context.

Each turn the message is searched, with the Lens's own search (``lens.search.search``: the word
search, and the semantic one when it is on), against the conversation older than the Recent
window, and the best passages, each with its neighbouring turns, its date and its speakers,
come into the context's Found section (``heart.assemble``) under a budget of their own. What
Recent shows is never searched, so nothing is shown twice. The message is searched by its
telling words only, so the search reads a bounded part of the index whatever the log's size and
whatever is pasted: those no more than ``FOUND_WORD_EVENTS_MAX`` events hold, at most the
``FOUND_QUERY_WORDS`` rarest, over the whole log; or, when every word is held by more (as in a
long log most are), the ``FOUND_COMMON_WORDS`` rarest over the newest stretch of the log in
which each of them is held by no more than ``FOUND_WORD_EVENTS_MAX``.
"""

from django.utils import timezone

from gem.recalled import RecalledItem
from gem.words import STOP_WORDS
from lens.search import (
    Hit,
    Neighbour,
    SearchError,
    events_holding,
    newest_holding,
    query_terms,
    search,
)
from lens.snippet import tokens, untagged

FOUND_PASSAGES = 8  # distinct passages found for a message at most: the budget takes what fits
FOUND_HITS = 24  # hits read for them: a passage whose turns overlap another's joins it
FOUND_QUERY_WORDS = 12  # the words of a message searched for at most: its rarest
# A word more events hold than this tells no turn from another: searching it would rank every
# turn it is in, hundreds of thousands in a large log, on every turn.
FOUND_WORD_EVENTS_MAX = 2_000
FOUND_COMMON_WORDS = 3  # the words searched for when every word is more common than that
FOUND_TIER = "found for the message"


def telling_words(message: str, *, before_event: int) -> tuple[list[str], int]:
    """The words of ``message`` searched for, in the message's order, and the first event
    searched (0: the whole log before ``before_event``).

    The Lens's query words (common words dropped) that no more than ``FOUND_WORD_EVENTS_MAX``
    events hold, the ``FOUND_QUERY_WORDS`` held by the fewest, over the whole log. When there
    are none, the ``FOUND_COMMON_WORDS`` whose ``FOUND_WORD_EVENTS_MAX``-th newest event lies
    furthest back, over the stretch since the latest of those events: the newest conversation
    holding them, where none of them is held by more than ``FOUND_WORD_EVENTS_MAX`` events."""
    words = query_terms(message)
    held = events_holding(words, most=FOUND_WORD_EVENTS_MAX)
    rare = [word for word in words if held[word] <= FOUND_WORD_EVENTS_MAX]
    if rare:
        kept = set(sorted(rare, key=lambda word: held[word])[:FOUND_QUERY_WORDS])
        return [word for word in rare if word in kept], 0
    common = [word for word in words if word not in STOP_WORDS]
    starts = newest_holding(common, most=FOUND_WORD_EVENTS_MAX, before=before_event)
    kept = set(sorted(common, key=lambda word: starts[word])[:FOUND_COMMON_WORDS])
    return [word for word in common if word in kept], max(
        (starts[word] for word in kept), default=0
    )


def found_for_message(message: str, *, before_event: int) -> list[RecalledItem]:
    """The best ``FOUND_PASSAGES`` passages of the conversation before ``before_event`` (the
    Recent window's first event) for ``message``, best first, as entries of the Found section:
    ``event:ID`` (the turn that matched) then the passage's date and its turns (the one before
    and the one after it too), tags left out. A turn found by its neighbours' words, not its
    own, is no passage of its own, and a hit whose turns overlap a passage's joins it. None when
    the message has no words to search for or nothing is said before.

    Summaries are not searched: found beside the passages, they took the budget of turns said
    word for word and fewer questions could be answered (``python -m bench answerable`` on the
    dev conversations, docs/benchmarks.md)."""
    if before_event <= 1:
        return []
    words, first_event = telling_words(message, before_event=before_event)
    if not words:
        return []
    try:
        hits = search(
            " ".join(words),
            kinds=("event",),
            limit=FOUND_HITS,
            event_ids=(first_event, before_event - 1),
        )
    except SearchError:
        return []
    stems = {stem for word in words for stem in tokens(word)}
    passages: list[tuple[Hit, dict[int, Neighbour]]] = []
    for hit in hits:
        if hit.beside or not stems & set(tokens(untagged(hit.text))):
            continue  # found by its neighbours' words, not its own
        turns = {turn.id: turn for turn in (*hit.before, *hit.after)}
        turns[hit.id] = Neighbour(hit.id, hit.ts, hit.actor, hit.text)
        joined = next((shown for _, shown in passages if shown.keys() & turns.keys()), None)
        if joined is not None:
            joined.update(turns)
        elif len(passages) < FOUND_PASSAGES:
            passages.append((hit, turns))
    return [RecalledItem(hit.ref, FOUND_TIER, _passage(turns)) for hit, turns in passages]


def _passage(turns: dict[int, Neighbour]) -> str:
    ordered = [turns[event_id] for event_id in sorted(turns)]
    when = timezone.localtime(ordered[0].ts).strftime("%Y-%m-%d %H:%M")
    lines = [f"{turn.actor or 'unknown'}: {untagged(turn.text)}" for turn in ordered]
    return f"{when}\n" + "\n".join(lines)
