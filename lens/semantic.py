"""The optional semantic half of event search (``SILENTSTAR_SEARCH_SEMANTIC``, off by default).

BM25 finds a turn by the words it shares with the question, and people often ask in other
words than they told: "which string instrument…" of "my cello!", "who became a parent" of "had
the baby". With the semantic search on, each event also has a sentence vector
(``lens.encoder``'s all-MiniLM-L6-v2), and the events of a search are ranked twice — by the
lexical search and by the similarity of their vectors to the question's — and the rankings
fused by reciprocal rank, the words' counting twice the vectors': the words lead, and a turn
they missed that is near the question in meaning comes up. Fragments and working memory stay
lexical.

Vectors
    Kept in ``lens_event_vector`` beside the log (lens 0003), one row per event: the mean of
    the turn's own vector and those of the exchanges it is in (``event_vectors``).
    ``vectors_fill`` writes the missing ones: a task queued after each turn
    (``lens.tasks.vectors_fill_task``) those of the newest events, so new turns are in before
    the next message; a backlog (switching the search on over a long history) is
    written by ``manage.py search_vectors``, with progress. The search itself only reads: an
    event without a vector yet is found by its words alone.

Scale
    A search compares the question with the vectors of the newest
    ``SILENTSTAR_SEARCH_SEMANTIC_WINDOW`` events its filters allow; older events are still found
    by their words. Which events those are, and the mark of each one's last write
    (``written``, lens 0006), are read from the store at every search: nothing can go stale.
    The vectors themselves are read once and held by the process (``HeldVectors``), and read
    again only for an event whose mark is not the one held: a new event, or the newest one
    written again when the next turn came.

It stays only because it finds more than the words alone on real conversations
(``docs/evaluation.md``). Imported only when the search is on (its requirements are needed
then alone).
"""

import secrets
import threading
from collections.abc import Callable, Sequence

import numpy as np
from django.conf import settings
from django.db import connections, transaction

from lens.encoder import encoder
from lens.snippet import untagged
from lens.sql import fetch_all, placeholders
from silentstar.router import store_for

# Reciprocal-rank fusion: an event at rank r (from 0) of a ranking earns weight / (RRF_K + r). A
# small K lets the top of each ranking lead; every ranking is cut at RRF_DEPTH. Chosen on real
# conversations (the LoCoMo dev half, docs/evaluation.md): K over 3, 5, 10, 30, 60 and the
# vectors' weight over 0 to 1.5 against the words' 1; the best lie in a flat band (K 3 to 10,
# weight 0.25 to 0.5), and a weight above the words' loses what the words find.
RRF_K = 5
RRF_DEPTH = 50
RRF_WEIGHTS = (1.0, 0.5)  # the words, all-MiniLM-L6-v2
FILL_AFTER_TURNS = 500  # the newest events whose missing vectors the task after a turn writes
FILL_BATCH = 128
READ_BATCH = 2_000  # vectors read by one statement


def event_sentence(actor: str, content: str) -> str:
    """An event as the model reads it: ``"Speaker: text"`` without tags."""
    return f"{actor}: {untagged(content)}"


Turn = tuple[str, str]  # (actor, content)


def sentence_models() -> tuple:
    """The semantic search's models, in the order of their rankings in ``RRF_WEIGHTS`` (after
    the words') and of their vectors in an event's row. Each has ``dimensions``,
    ``encode(texts)`` (events) and ``encode_question(question)``."""
    return (encoder(),)


def event_vectors(models, events: Sequence[tuple[Turn, Turn | None, Turn | None]]):
    """The vectors of events given as ``(turn, the turn before, the turn after)`` (the events
    next to it in the log, ``None`` where there is none yet), each model's side by side: the
    mean of the turn's own vector and those of the two exchanges it is in (the turn before and
    it; it and the turn after). A question is often answered by a turn that only makes sense
    beside its neighbours ("Did you make it?" — "I did! Rotterdam, two hours" — "You legend, ice
    bath tonight"); the turn's own vector keeps what it says itself from being blurred."""
    own, earlier, later = [], [], []
    for turn, before, after in events:
        sentence = event_sentence(*turn)
        own.append(sentence)
        earlier.append(f"{event_sentence(*before)} {sentence}" if before else sentence)
        later.append(f"{sentence} {event_sentence(*after)}" if after else sentence)
    return np.hstack(
        [(model.encode(own) + model.encode(earlier) + model.encode(later)) / 3 for model in models]
    )


def vectors_fill(
    *,
    event_ids: tuple[int, int] | None = None,
    newest: int | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> int:
    """Write the vectors of the events that have none (of ``event_ids``, an inclusive id
    range, if given; among the ``newest`` events of the log alone, if given), oldest first, in
    batches each committed on its own; return how many were missing. The event just before
    each, if it has a vector, is written again: its vector was made before the turn after it
    was there. ``progress(done, total)`` after each batch."""
    connection = connections[store_for("heart", "event")]
    missing = _missing(connection, event_ids, newest)
    models = sentence_models()
    for start in range(0, len(missing), FILL_BATCH):
        batch = missing[start : start + FILL_BATCH]
        targets = sorted({*batch, *_vectors_before(connection, batch)})
        vectors_write(connection, targets, event_vectors(models, _events(connection, targets)))
        if progress is not None:
            progress(min(start + FILL_BATCH, len(missing)), len(missing))
    return len(missing)


def vectors_write(connection, event_ids: Sequence[int], vectors: np.ndarray) -> None:
    """Store these events' vectors (one row each, as 16-bit floats) in one transaction, in place
    of any they had, each with a new write mark (``_write_mark``)."""
    with transaction.atomic(using=connection.alias), connection.cursor() as cursor:
        cursor.executemany(
            "INSERT INTO lens_event_vector (event_id, vector, written) VALUES (%s, %s, %s) "
            "ON CONFLICT (event_id) DO UPDATE "
            "SET vector = excluded.vector, written = excluded.written",
            [
                (event_id, vector.astype(np.float16).tobytes(), _write_mark())
                for event_id, vector in zip(event_ids, vectors, strict=True)
            ],
        )


def _write_mark() -> int:
    """A vector row's ``written``: drawn anew at every write (a positive 62-bit number, within
    both backends' integers), so a held copy can tell a row written since from the one it read."""
    return secrets.randbits(62) + 1


def _missing(connection, event_ids: tuple[int, int] | None, newest: int | None) -> list[int]:
    """The events without a vector. ``newest`` bounds what is read, not only what is returned:
    the task after every turn looks at the newest events alone, never down a long log."""
    where, params = "", []
    if event_ids is not None:
        where, params = " AND e.id BETWEEN %s AND %s", list(event_ids)
    if newest is not None:
        where += (
            " AND e.id >= (SELECT coalesce(min(n.id), 0) FROM "
            "(SELECT id FROM heart_event ORDER BY id DESC LIMIT %s) n)"
        )
        params.append(newest)
    sql = (
        "SELECT e.id FROM heart_event e LEFT JOIN lens_event_vector v ON v.event_id = e.id "
        f"WHERE v.event_id IS NULL{where}"
    )
    return sorted(event_id for (event_id,) in fetch_all(connection, sql, params))


# The events just before and after ``e`` in the log (ids may have gaps).
_BEFORE = "(SELECT max(p.id) FROM heart_event p WHERE p.id < e.id)"
_AFTER = "(SELECT min(n.id) FROM heart_event n WHERE n.id > e.id)"


def _vectors_before(connection, ids: Sequence[int]) -> list[int]:
    """The events just before these that have a vector."""
    rows = fetch_all(
        connection,
        f"SELECT v.event_id FROM heart_event e JOIN lens_event_vector v ON v.event_id = {_BEFORE} "
        f"WHERE e.id IN ({placeholders(ids)})",
        list(ids),
    )
    return [event_id for (event_id,) in rows]


def _events(connection, ids: Sequence[int]) -> list[tuple[Turn, Turn | None, Turn | None]]:
    """``(turn, the turn before, the turn after)`` of each id, in order, as ``event_vectors``
    takes them, read as their corrections leave them (``lens_event_corrected``: no text once
    retracted)."""
    rows = fetch_all(
        connection,
        "SELECT e.id, e.actor, e.content, b.actor, b.content, a.actor, a.content "
        f"FROM lens_event_corrected e LEFT JOIN lens_event_corrected b ON b.id = {_BEFORE} "
        f"LEFT JOIN lens_event_corrected a ON a.id = {_AFTER} "
        f"WHERE e.id IN ({placeholders(ids)})",
        list(ids),
    )
    found = {}
    for event_id, actor, content, actor_before, content_before, actor_after, content_after in rows:
        before = (actor_before, content_before) if actor_before is not None else None
        after = (actor_after, content_after) if actor_after is not None else None
        found[event_id] = ((actor, content), before, after)
    return [found[event_id] for event_id in ids]


def semantic_rankings(
    query: str, where: str, params: list, *, depth: int = RRF_DEPTH
) -> list[list[int]]:
    """For each model (``sentence_models``), the ids of the events most like ``query``, best
    first: among the newest ``SILENTSTAR_SEARCH_SEMANTIC_WINDOW`` events that match the SQL
    conditions ``where`` (on ``e``, the log)."""
    connection = connections[store_for("heart", "event")]
    ids, matrix, at = held_vectors(connection).window(window_rows(connection, where, params))
    models = sentence_models()
    if not len(ids):
        return [[] for _ in models]
    questions = [model.encode_question(query) for model in models]
    return likeness_rankings(ids, matrix, at, questions, depth=depth)


def window_rows(connection, where: str, params: list) -> list[tuple[int, int]]:
    """``(event_id, written)`` of the newest ``SILENTSTAR_SEARCH_SEMANTIC_WINDOW`` events with a
    vector that match ``where``, newest first: read from the index alone, no vector."""
    return fetch_all(
        connection,
        "SELECT v.event_id, v.written FROM lens_event_vector v "
        f"JOIN heart_event e ON e.id = v.event_id WHERE TRUE{where} "
        "ORDER BY v.event_id DESC LIMIT %s",
        [*params, settings.SEARCH_SEMANTIC_WINDOW],
    )


def likeness_rankings(
    ids: np.ndarray, matrix: np.ndarray, at: np.ndarray, questions: Sequence, *, depth: int
) -> list[list[int]]:
    """For each question vector (one a model, in the row's order), the ``ids`` best first by
    its likeness to that model's columns of their rows (``at`` in ``matrix``); a tie keeps the
    order of ``ids``."""
    # Every model's question against its own columns in one product: the held matrix is read
    # whole and in place (no copy of the window's rows, nor of one model's columns).
    stacked, start = np.zeros((matrix.shape[1], len(questions)), dtype=np.float32), 0
    for n, question in enumerate(questions):
        stacked[start : start + len(question), n] = question
        start += len(question)
    likeness = (matrix @ stacked)[at]
    return [
        [int(ids[n]) for n in np.argsort(-column, kind="stable")[:depth]] for column in likeness.T
    ]


class HeldVectors:
    """The vectors one process has read from one store, by event id, each with the ``written``
    mark of the row it was read from. Bounded: when it would hold more than twice the window,
    it keeps the current window's alone."""

    def __init__(self, connection):
        self.alias = connection.alias
        self.ids = np.empty(0, dtype=np.int64)  # ascending
        self.marks = np.empty(0, dtype=np.int64)
        self.matrix = np.empty((0, 0), dtype=np.float32)
        self.lock = threading.Lock()

    def window(self, rows: Sequence[tuple[int, int]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The window's ``(event_id, written)`` rows as ``(ids, matrix, at)``: the ids in the
        window's order and, for each, its vector's row in ``matrix`` (the copy as it is now, never
        changed in place). Vectors held with the same mark come from the copy, the rest are read
        from the store first; an event whose vector is gone by then is left out."""
        ids = np.fromiter((event_id for event_id, _ in rows), dtype=np.int64, count=len(rows))
        marks = np.fromiter((mark for _, mark in rows), dtype=np.int64, count=len(rows))
        with self.lock:
            at, found = self._find(ids)
            held = found.copy()
            held[found] = self.marks[at[found]] == marks[found]
            if not held.all():
                read = self._read(ids[~held], keep=ids)
                at, found = self._find(ids)
                # Read just now (its mark may be newer than the window's: written in between).
                held = found & (held | np.isin(ids, read))
            return ids[held], self.matrix, at[held]

    def _find(self, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Where each id is in the copy, and whether it is there at all."""
        if not len(self.ids):
            return np.zeros(len(ids), dtype=np.int64), np.zeros(len(ids), dtype=bool)
        at = np.minimum(np.searchsorted(self.ids, ids), len(self.ids) - 1)
        return at, self.ids[at] == ids

    def _read(self, wanted: np.ndarray, *, keep: np.ndarray) -> np.ndarray:
        """Read the vectors of ``wanted`` into the copy, in place of those held; return the ids
        read. Past twice the window, only the rows of ``keep`` (the window) stay."""
        connection = connections[self.alias]
        rows = []
        for start in range(0, len(wanted), READ_BATCH):
            batch = [int(event_id) for event_id in wanted[start : start + READ_BATCH]]
            rows += fetch_all(
                connection,
                "SELECT event_id, written, vector FROM lens_event_vector "
                f"WHERE event_id IN ({placeholders(batch)})",
                batch,
            )
        if not rows:
            return np.empty(0, dtype=np.int64)
        read_ids = np.fromiter((row[0] for row in rows), dtype=np.int64, count=len(rows))
        read_marks = np.fromiter((row[1] for row in rows), dtype=np.int64, count=len(rows))
        read = np.frombuffer(b"".join(bytes(row[2]) for row in rows), dtype=np.float16)
        read = read.reshape(len(rows), -1).astype(np.float32)
        stay = ~np.isin(self.ids, read_ids)
        if len(self.ids) + len(read_ids) > 2 * settings.SEARCH_SEMANTIC_WINDOW:
            stay &= np.isin(self.ids, keep)
        if self.matrix.shape[1] != read.shape[1]:
            stay[:] = False  # vectors of another width (the models changed), or none held yet
        ids = np.concatenate([self.ids[stay], read_ids])
        order = np.argsort(ids, kind="stable")
        self.ids = ids[order]
        self.marks = np.concatenate([self.marks[stay], read_marks])[order]
        self.matrix = (
            np.concatenate([self.matrix[stay], read])[order] if stay.any() else read[order]
        )
        return read_ids


_held: dict[str, HeldVectors] = {}
_held_lock = threading.Lock()


def held_vectors(connection) -> HeldVectors:
    """The process's copy of the vectors of the store behind ``connection`` (one per database:
    the test suite's and a deployment's are never mixed)."""
    key = f"{connection.alias}:{connection.vendor}:{connection.settings_dict['NAME']}"
    with _held_lock:
        if key not in _held:
            _held[key] = HeldVectors(connection)
        return _held[key]


def reciprocal_rank_fusion(
    rankings: Sequence[Sequence[int]], *, weights: Sequence[float], k: int = RRF_K
) -> list[tuple[float, int]]:
    """``(fused score, id)`` best first: each id earns ``weight / (k + rank)`` from each ranking
    it is in (ranks from 0; ``weights`` one a ranking); ties go to the smaller id."""
    if len(weights) != len(rankings):
        raise ValueError(f"{len(rankings)} rankings but {len(weights)} weights")
    scores: dict[int, float] = {}
    for ranking, weight in zip(rankings, weights, strict=True):
        for rank, item in enumerate(ranking):
            scores[item] = scores.get(item, 0.0) + weight / (k + rank)
    return sorted(((score, item) for item, score in scores.items()), key=lambda p: (-p[0], p[1]))
