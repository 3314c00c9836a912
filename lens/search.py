"""Full-text search over fragments, events, working memory and the Mirror's summaries: one API
over SQLite and PostgreSQL.

The indexes are built and kept in step by triggers (``lens/migrations/0001_search_indexes.py``,
``0008_summary_index.py`` for summaries): FTS5 with the Porter stemmer on SQLite, weighted
``tsvector`` columns under GIN on PostgreSQL. Each lives in the store of what it indexes, so
each kind is searched in one store. Summaries are searched only when asked for by kind
(``DEFAULT_KINDS`` leaves them out), so the search page and a reply's ``search(…)`` find what
they found before.

Query words
    The query is cut into words; common English words ("what", "did", "the", and light verbs
    such as "go", which match small talk far more than facts) and the ``s`` of a possessive
    are dropped unless nothing else is left, and the rest are OR-ed: a hit needs one word, and
    ranking puts the hits with the rarer and more numerous words first: BM25 on SQLite; on
    PostgreSQL each word's ``ts_rank`` weighted by the word's BM25 inverse document frequency
    (events; ``ts_rank`` alone counts a common word as much as a rare one). Stemming makes
    "named" find "name" and "puppies" "puppy".

Events
    An event is indexed with its own text (weight 1), its speaker and its date in words (UTC),
    and the two events before it as context (a lower weight): the answer to a question is then
    found by the question's words. At query time, among the best few times ``limit`` events and
    the events next to them, an event also earns a share of the better score of the events just
    before and after it (turn and window scores fused), and the turns of a speaker the query
    names count more. Only the best ``limit × FUSION_POOL`` of each query are fetched, ranked
    and cut in SQL. A hit carries the turns around it (``neighbours`` each side). The weights
    were chosen on the dev set (``python -m bench generate`` writes it as ``data/eval/dev.json``),
    not on the held-out sets (``heldout.json`` was looked at while tuning since, ``heldout2.json``
    and ``heldout3.json`` never: ``bench/generate.py``).

    A turn the neighbour fusion brought in alone, none of the words in it or in its index
    row, is beside a match (``Hit.beside``). It keeps its place (those turns are the answers to
    questions asked in other words), and it always comes after the hit it is beside, among
    whose turns it is shown: the search page leaves it out, a reply's ``search(…)`` joins it to
    that hit's passage.

Scores
    From 0 to 1, higher is better, one scale for every kind (``one_scale``).
"""

import math
import re
from bisect import bisect_left, bisect_right
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from operator import itemgetter
from typing import NamedTuple

from django.conf import settings
from django.db import connections
from django.utils import timezone

from gem.recalled import RecalledItem
from gem.words import STOP_WORDS
from lens.snippet import is_plain, tokens, untagged
from lens.snippet import snippet as fts5_snippet
from lens.sql import fetch_all, fetch_rows, placeholders
from silentstar.router import store_for

KINDS = ("fragment", "event", "wm", "summary")
DEFAULT_KINDS = ("fragment", "event", "wm")  # searched unless the kinds are named
MAX_LIMIT = 100
MAX_TERMS = 32
NEIGHBOURS = 1  # turns each side of an event hit
# An event also earns this share of the better score of the events just before and after it
# (a question and its answer, a story told over two turns), among this many times the limit.
NEIGHBOUR_FUSION = 0.6
FUSION_POOL = 4
# A speaker named in the query: their turns count this much more. A name in half the turns
# is worth next to nothing to BM25, yet "what did Ben…" is mostly answered by Ben.
SPEAKER_BOOST = 0.5
MARK_OPEN, MARK_CLOSE = "**", "**"
SNIPPET_TOKENS = 24  # words in a hit's passage
SNIPPET_ELLIPSIS = "…"

# Column weights. SQLite bm25: content, speaker, date words, context (the turns before).
SQLITE_EVENT_WEIGHTS = (1.0, 0.5, 0.5, 0.2)
SQLITE_EVENT_RANK = f"bm25(lens_event_fts, {', '.join(map(str, SQLITE_EVENT_WEIGHTS))})"
SQLITE_FRAGMENT_WEIGHTS = (2.0, 1.0, 0.7, 0.5)  # key, ambient, recognition, inventory
SQLITE_WM_WEIGHTS = (1.0, 0.5, 0.2)  # content, subject, type
SQLITE_SUMMARY_WEIGHTS = (1.0,)  # content
# PostgreSQL ts_rank weights for D, C, B, A (see the migration for what each letter holds).
POSTGRES_WEIGHTS = "{0.1, 0.2, 0.5, 1.0}"


_WORD_RE = re.compile(r"[^\W_]+", re.UNICODE)
_MARK_START, _MARK_END = "\x02", "\x03"


class SearchError(ValueError):
    """A search that cannot be run as asked; the message says what is wrong."""


class Neighbour(NamedTuple):
    """A turn next to an event hit, so the reader sees the conversation around it. A named
    tuple: a search makes dozens, and a frozen dataclass takes three times as long to make."""

    id: int
    ts: datetime
    actor: str
    text: str


class Hit(NamedTuple):
    """One hit of a search. Its passage, ``snippet``, is made by the database with the ranking
    (fragments, working memory, PostgreSQL's events, and SQLite's events whose text
    ``lens.snippet`` cannot cut) or, for the other events, from the hit's text and the query's
    ``words`` when it is read: most searches (a reply's ``search(…)``, Mira's query, the
    evaluation) never show a passage, and making ten costs a quarter of a search. A named
    tuple, as ``Neighbour``: a frozen dataclass takes three times as long to make."""

    kind: str  # fragment | event | wm | summary
    id: int | None  # event, working-memory or summary id
    key: str | None  # fragment key
    score: float
    ts: datetime | None  # events: when said; wm, summaries: created; fragments: last updated
    text: str = ""  # the whole event, working-memory item, summary or fragment (its fullest tier)
    actor: str = ""
    detail: str = ""  # wm: "type, status"; summaries: "L0, events 12–40" (", superseded by #9")
    before: tuple[Neighbour, ...] = ()
    after: tuple[Neighbour, ...] = ()
    passage: str | None = None  # made by the database; None: made from text and words when read
    words: tuple[str, ...] = ()  # the query's words, marked in a passage made when read
    beside: bool = False  # an event brought in by its neighbours alone: none of the words found it
    tier: str = ""  # fragments: the tier the passage is from (ambient, recognition, inventory)
    tiers: tuple[str, str, str] = ("", "", "")  # fragments: ambient, recognition, inventory

    @property
    def ref(self) -> str:
        """``event:12``, ``wm:3``, ``fragment:fairy``, ``summary:4``."""
        return f"{self.kind}:{self.key if self.kind == 'fragment' else self.id}"

    @property
    def snippet(self) -> str:
        """The best passage, matched words in **bold**. One made when read is made anew at
        every reading (a hit keeps nothing): read it once."""
        if self.passage is not None:
            return self.passage
        made = fts5_snippet(
            self.text,
            self.words,
            start=_MARK_START,
            end=_MARK_END,
            ellipsis=SNIPPET_ELLIPSIS,
            size=SNIPPET_TOKENS,
        )
        return _snippet(made or self.text)


def query_terms(query: str) -> list[str]:
    """The words searched for: lower-cased, common words (and the ``s`` of a possessive)
    dropped unless nothing else is left."""
    # Folded before the words are found: a letter may fold into several, not all of them letters
    # ("ΰ" into "υ" and two combining marks).
    words = list(dict.fromkeys(_WORD_RE.findall((query or "").casefold())))
    kept = [word for word in words if word not in STOP_WORDS and len(word) > 1]
    return (kept or words)[:MAX_TERMS]


def fts5_expression(terms: Sequence[str]) -> str:
    """An FTS5 MATCH expression: any of the terms (each quoted, so none is an operator)."""
    return " OR ".join(f'"{term}"' for term in terms)


def tsquery_expression(terms: Sequence[str]) -> str:
    """A ``to_tsquery`` text: any of the terms (words only, so nothing needs escaping)."""
    return " | ".join(terms)


def search(
    query: str,
    *,
    kinds: Iterable[str] = DEFAULT_KINDS,
    limit: int = 10,
    since: datetime | None = None,
    until: datetime | None = None,
    actor: str | None = None,
    event_ids: tuple[int, int] | None = None,
    neighbours: int = NEIGHBOURS,
    words_only: bool = False,
) -> list[Hit]:
    """The best ``limit`` hits for ``query``, best first.

    ``kinds``: any of ``KINDS``; summaries only when named (``DEFAULT_KINDS`` leaves them out).
    ``since``/``until``: events said, working memory and summaries created, fragments last
    updated in ``[since, until)``. ``actor``: events and working memory by that speaker
    (fragments and summaries have none, so they drop out). ``event_ids``: only events with ids
    in that inclusive range (one conversation, one summary's span), and summaries whose span
    overlaps it. ``words_only``: only what the query's words match (in an event's text or its
    context), as a filter needs: no turn brought in by its neighbours' scores, no semantic
    ranking.
    """
    kinds = tuple(dict.fromkeys(kinds))
    if unknown := [kind for kind in kinds if kind not in KINDS]:
        raise SearchError(f"Unknown kind {unknown[0]!r}: search knows {', '.join(KINDS)}.")
    if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= MAX_LIMIT:
        raise SearchError(f"limit must be a whole number from 1 to {MAX_LIMIT}, not {limit!r}.")
    if since and until and since >= until:
        raise SearchError("since must come before until.")
    terms = query_terms(query)
    if not terms:
        raise SearchError("The query has no words to search for.")
    filters = _Filters(
        since=since,
        until=until,
        actor=actor or None,
        event_ids=event_ids,
        words_only=words_only,
    )
    found: list[list[Hit]] = []
    if "fragment" in kinds and filters.actor is None:
        found.append(_fragments(terms, filters, limit))
    if "wm" in kinds:
        found.append(_working_memory(terms, filters, limit))
    if "event" in kinds:
        found.append(_events(query, terms, filters, limit, neighbours))
    if "summary" in kinds and filters.actor is None:
        found.append(_summaries(terms, filters, limit))
    return one_scale([hits for hits in found if hits], terms)[:limit]


def one_scale(found: Sequence[Sequence[Hit]], terms: Sequence[str]) -> list[Hit]:
    """The hits of every kind (one ranking a kind, best first) on one scale, best first.

    A kind's scores (BM25 with a few rows or with millions, a fusion of ranks) mean nothing to
    another's. Each hit scores its kind's score over the best of its kind, times the share of
    the query's words the kind's best holder holds in its own text (a fragment's key and
    tiers, a working-memory item's content, subject and type, a turn's text and speaker): so
    the best hit of each kind scores what it answers of the query, and a kind keeps its own
    order. Equal scores go to fragments, then working memory, then turns, then summaries."""
    stems = {word: set(tokens(word)) for word in terms}
    scaled = []
    for kind_rank, hits in enumerate(found):
        best = hits[0].score
        held = max((_held_share(hit, stems) for hit in hits if not hit.beside), default=0.0)
        for rank, hit in enumerate(hits):
            score = held * hit.score / best if best > 0 else 0.0
            scaled.append((-score, kind_rank, rank, hit._replace(score=score)))
    scaled.sort(key=itemgetter(0, 1, 2))
    return [hit for *_, hit in scaled]


def _held_share(hit: Hit, stems: dict[str, set[str]]) -> float:
    """The share of the query's words (their stems, as the index cuts them) in the hit's own
    text."""
    own = " ".join((hit.key or "", *hit.tiers, hit.text, hit.actor, hit.detail))
    held = set(tokens(own))
    return sum(1 for word_stems in stems.values() if word_stems <= held) / len(stems)


# --- per kind ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Filters:
    since: datetime | None
    until: datetime | None
    actor: str | None
    event_ids: tuple[int, int] | None
    words_only: bool = False


def _where(connection, filters: _Filters, *, ts: str, actor: str | None, id_column: str | None):
    """SQL conditions and parameters for the filters, on the given columns."""
    clauses, params = [], []
    if filters.since is not None:
        clauses.append(f"{ts} >= %s")
        params.append(connection.ops.adapt_datetimefield_value(filters.since))
    if filters.until is not None:
        clauses.append(f"{ts} < %s")
        params.append(connection.ops.adapt_datetimefield_value(filters.until))
    if filters.actor is not None and actor is not None:
        clauses.append(f"{actor} = %s")
        params.append(filters.actor)
    if filters.event_ids is not None and id_column is not None:
        first, last = filters.event_ids
        clauses.append(f"{id_column} BETWEEN %s AND %s")
        params += [first, last]
    return "".join(f" AND {clause}" for clause in clauses), params


def _events(query: str, terms, filters: _Filters, limit: int, neighbours: int) -> list[Hit]:
    connection = connections[store_for("heart", "event")]
    with connection.cursor() as cursor:  # one for all the statements: Django makes each anew
        if settings.SEARCH_SEMANTIC and not filters.words_only:
            from lens import semantic  # NumPy and the model only when the search is on

            word_ranking, beside = _words_ranking(
                cursor, terms, filters, limit, depth=semantic.RRF_DEPTH
            )
            where, params = _where(
                connection, filters, ts="e.ts", actor="e.actor", id_column="e.id"
            )
            meaning_rankings = semantic.semantic_rankings(query, where, params)
            beside = beside.difference(*meaning_rankings)  # near the question in meaning
            fused = semantic.reciprocal_rank_fusion(
                [[event_id for _, event_id in word_ranking], *meaning_rankings],
                weights=semantic.RRF_WEIGHTS,
            )[:limit]
        else:
            fused, beside = _words_ranking(cursor, terms, filters, limit, depth=limit)
        if not fused:
            return []
        events, passages = _events_around(
            cursor, terms, [event_id for _, event_id in fused], neighbours, filters.event_ids
        )
    words = tuple(terms)
    hits = []
    for score, event_id in fused:
        if event_id not in events:  # a neighbour past the newest event
            continue
        event = events[event_id]
        passage = passages.get(event_id)
        hits.append(
            Hit(
                kind="event",
                id=event_id,
                key=None,
                score=score,
                ts=event.ts,
                text=event.text,
                actor=event.actor,
                before=tuple(
                    [events[i] for i in range(event_id - neighbours, event_id) if i in events]
                ),
                after=tuple(
                    [
                        events[i]
                        for i in range(event_id + 1, event_id + neighbours + 1)
                        if i in events
                    ]
                ),
                passage=passage,
                words=words,
                beside=event_id in beside,
            )
        )
    return hits


def _words_ranking(
    cursor, terms, filters: _Filters, limit: int, *, depth: int
) -> tuple[list[tuple[float, int]], set[int]]:
    """The best ``depth`` ``(score, event id)`` by the query's words, and the ids among them of
    the turns beside a match (brought in by their neighbours alone): the best
    ``fusion_pool(limit)`` events, a named speaker's turns boosted, and each event given its
    share of its neighbours' scores (``NEIGHBOUR_FUSION``)."""
    named = set(terms)
    scores = {
        event_id: score * (1 + SPEAKER_BOOST) if actor.casefold() in named else score
        for event_id, score, actor in event_ranking(
            cursor, terms, filters, limit=fusion_pool(limit)
        )
    }
    fused = _neighbour_fusion(scores, filters, depth=depth)
    return fused, {event_id for _, event_id in fused if event_id not in scores}


def _neighbour_fusion(
    scores: dict[int, float], filters: _Filters, *, depth: int
) -> list[tuple[float, int]]:
    """The best ``depth`` ``(score, event id)`` of the ranked events (``scores``, all positive)
    and the turns next to them (``_with_neighbours``), best first, ties to the older event:
    each scores its own score plus ``NEIGHBOUR_FUSION`` × the better of its neighbours'."""
    score = scores.get

    def share(event_id: int) -> float:
        # NEIGHBOUR_FUSION × the better of the neighbours' scores (0 when none is ranked; scores
        # are positive), which is the better of their shares, as rounding keeps order.
        return NEIGHBOUR_FUSION * max(score(event_id - 1, 0.0), score(event_id + 1, 0.0))

    fused = {event_id: best + share(event_id) for event_id, best in scores.items()}
    # A turn outside the pool scores its share alone, NEIGHBOUR_FUSION × its better neighbour's
    # score: it is among the best ``depth`` only if that reaches the ``depth``-th best score of
    # the ranked events (the turns added can only raise that bar), so only the neighbours of
    # such events are scored, not the two of every ranked event (half the fusion's work).
    reach = sorted(fused.values(), reverse=True)[depth - 1] if len(fused) >= depth else -math.inf
    reaching = [event_id for event_id, best in scores.items() if best * NEIGHBOUR_FUSION >= reach]
    for event_id in _with_neighbours(reaching, filters):
        if event_id not in scores:
            fused[event_id] = share(event_id)
    # Best first, ties to the older event: the events come in id order, and sorting keeps it.
    ranking = [(best, event_id) for event_id, best in sorted(fused.items())]
    ranking.sort(key=itemgetter(0), reverse=True)
    return ranking[:depth]


def _with_neighbours(ranked: Collection[int], filters: _Filters) -> list[int]:
    """The ranked events and the events just before and after each, in id order: a turn that
    shares no word with the query, between the question that asked for it and the reply to it,
    earns its share of their scores even though its own kept it out of the pool. Not under a
    time or speaker filter, which a neighbour may not pass, nor when only the words' matches
    are wanted."""
    if filters.words_only or any(
        f is not None for f in (filters.since, filters.until, filters.actor)
    ):
        return sorted(ranked)
    low, high = filters.event_ids or (1, None)
    around = sorted(set(ranked).union([i - 1 for i in ranked], [i + 1 for i in ranked]))
    return around[bisect_left(around, low) : None if high is None else bisect_right(around, high)]


def events_holding(terms: Sequence[str], *, most: int) -> dict[str, int]:
    """How many events of the log hold each of ``terms``, counted no further than ``most + 1``
    (so each count reads at most that many rows of the index, whatever the log's size), in one
    statement: a search can leave out the words too common to tell one turn from another before
    it ranks every turn they are in."""
    if not terms:
        return {}
    connection = connections[store_for("heart", "event")]
    if connection.vendor == "sqlite":
        held = "SELECT 1 FROM lens_event_fts WHERE lens_event_fts MATCH %s LIMIT %s"
        values = [value for term in terms for value in (fts5_expression([term]), most + 1)]
    else:
        held = "SELECT 1 FROM lens_event_index WHERE document @@ to_tsquery('english', %s) LIMIT %s"
        values = [value for term in terms for value in (tsquery_expression([term]), most + 1)]
    counts = ", ".join(f"(SELECT count(*) FROM ({held}) AS held{n})" for n in range(len(terms)))
    (row,) = fetch_all(connection, f"SELECT {counts}", values)
    return dict(zip(terms, row, strict=True))


def newest_holding(terms: Sequence[str], *, most: int, before: int) -> dict[str, int]:
    """For each of ``terms``, the id of the ``most``-th newest event before ``before`` that
    holds it (0 when fewer do), in one statement: the start of the newest stretch of the log in
    which the word is held by no more than ``most`` events. The index is read newest first, so
    each word reads at most ``most`` of its rows, whatever the log's size."""
    if not terms:
        return {}
    connection = connections[store_for("heart", "event")]
    if connection.vendor == "sqlite":
        nth = (
            "SELECT rowid FROM lens_event_fts WHERE lens_event_fts MATCH %s AND rowid < %s "
            "ORDER BY rowid DESC LIMIT 1 OFFSET %s"
        )
        expression = fts5_expression
    else:
        nth = (
            "SELECT event_id FROM lens_event_index WHERE document @@ to_tsquery('english', %s) "
            "AND event_id < %s ORDER BY event_id DESC LIMIT 1 OFFSET %s"
        )
        expression = tsquery_expression
    values = [value for term in terms for value in (expression([term]), before, most - 1)]
    starts = ", ".join(f"coalesce(({nth}), 0)" for _ in terms)
    (row,) = fetch_all(connection, f"SELECT {starts}", values)
    return dict(zip(terms, row, strict=True))


def fusion_pool(limit: int) -> int:
    """Events ranked for a search of ``limit`` hits, among which the neighbour fusion picks."""
    return min(limit * FUSION_POOL, 500)


def event_ranking(
    cursor, terms: Sequence[str], filters: _Filters, *, limit: int
) -> list[tuple[int, float, str]]:
    """``(event id, score, actor)`` of the best ``limit`` events for ``terms``, read through
    ``cursor`` (on the events' store), in one statement.

    SQLite ranks in the FTS5 index alone, an id range as a rowid range, and joins the log only
    when a time or speaker filter needs it: a join before the LIMIT costs a log lookup for every
    match, hundreds of thousands for a common word in a large log."""
    connection = cursor.db
    if connection.vendor != "sqlite":
        sql, params = _postgres_event_ranking(connection, terms, filters, limit=limit)
        rows = fetch_rows(cursor, sql, params)
        return [(event_id, float(score), actor) for event_id, score, actor in rows]
    joined = filters.since is not None or filters.until is not None or filters.actor is not None
    where, params = _where(connection, filters, ts="e.ts", actor="e.actor", id_column="f.rowid")
    join = " JOIN heart_event e ON e.id = f.rowid" if joined else ""
    # CROSS JOIN: SQLite then reads the best rows as they come (a co-routine) instead of
    # writing them to a temporary table first, as it does for a plain JOIN to a subquery.
    sql = (
        "SELECT best.id, -best.bm25_rank, a.actor FROM (SELECT f.rowid AS id, "
        f"{SQLITE_EVENT_RANK} AS bm25_rank "
        f"FROM lens_event_fts f{join} WHERE lens_event_fts MATCH %s{where} "
        "ORDER BY bm25_rank LIMIT %s) best CROSS JOIN heart_event a ON a.id = best.id"
    )
    return fetch_rows(cursor, sql, [fts5_expression(terms), *params, limit])


def _postgres_event_ranking(connection, terms, filters: _Filters, *, limit: int):
    """``ts_rank`` knows nothing of how rare a word is, so a speaker's name in half the turns
    would count as much as the one word that matters. Each word's ``ts_rank`` is weighted by
    its BM25 inverse document frequency among the events the filters allow instead."""
    where, params = _where(connection, filters, ts="e.ts", actor="e.actor", id_column="e.id")
    lexeme = "to_tsquery('english', %s)"
    counts = ", ".join(
        f"count(*) FILTER (WHERE h.document @@ {lexeme}) AS d{n}" for n in range(len(terms))
    )
    score = " + ".join(
        f"ts_rank(%s::float4[], h.document, {lexeme}) "
        f"* ln(1 + (f.n - f.d{n} + 0.5) / (f.d{n} + 0.5))"
        for n in range(len(terms))
    )
    sql = (
        "WITH h AS MATERIALIZED (SELECT i.event_id, i.document, e.actor "
        "FROM lens_event_index i JOIN heart_event e ON e.id = i.event_id "
        f"WHERE i.document @@ {lexeme}{where}), "
        f"f AS (SELECT (SELECT count(*) FROM heart_event e WHERE TRUE{where}) AS n, {counts} "
        "FROM h) "
        f"SELECT h.event_id, {score} AS score, h.actor FROM h, f "
        "ORDER BY score DESC, h.event_id LIMIT %s"
    )
    scored = [value for term in terms for value in (POSTGRES_WEIGHTS, term)]
    return sql, [tsquery_expression(terms), *params, *params, *terms, *scored, limit]


def _events_around(
    cursor, terms, ids: list[int], neighbours: int, bounds: tuple[int, int] | None
) -> tuple[dict[int, Neighbour], dict[int, str]]:
    """The hits and the events next to them (by id), and the passages the database makes for
    the hits (matched words marked). The ids are listed: an OR of ranges makes SQLite scan the
    whole log. On SQLite they are a ``VALUES`` table joined to the log, each looked up as it is
    read: an ``IN`` list is first sorted into a temporary index (a sixth of the statement).

    PostgreSQL makes every hit's passage (``ts_headline``). On SQLite the passages are made
    from the hits' text when read (``Hit.snippet``, through ``lens.snippet``): ``snippet()``
    would match the query over the whole index again, for rows already known. Only a text that
    ``lens.snippet`` cannot cut as the index does (emoji, scripts newer than the index's
    tables) is left to ``snippet()``, here.

    The events are read as corrected (``lens_event_corrected``, lens 0009): edited text, the
    speaker a re-attribution gave, and a retracted event neither a hit nor a neighbour."""
    connection = cursor.db
    wanted = {i + step for i in ids for step in range(-neighbours, neighbours + 1)}
    if bounds is not None:
        low, high = bounds
        wanted = {i for i in wanted if low <= i <= high}
    wanted.update(ids)
    if connection.vendor != "sqlite":
        sql = (
            f"SELECT e.id, e.ts, e.actor, e.content, CASE WHEN e.id IN ({placeholders(ids)}) "
            f"THEN ts_headline('english', e.content, q, '{_HEADLINE}') END "
            "FROM lens_event_corrected e, to_tsquery('english', %s) q "
            f"WHERE e.id IN ({placeholders(wanted)})"
        )
        rows = fetch_rows(cursor, sql, [*ids, tsquery_expression(terms), *sorted(wanted)])
        events = {
            pk: Neighbour(pk, _aware(connection, ts), actor, content)
            for pk, ts, actor, content, _ in rows
            if content
        }
        made = {pk: passage for pk, *_, passage in rows if passage is not None and pk in events}
        return events, {i: _snippet(passage or events[i].text) for i, passage in made.items()}
    # The time as text: Django's converter would parse it, then _aware parse what it made.
    sql = (
        "SELECT e.id, CAST(e.ts AS TEXT), e.actor, e.content "
        f"FROM (VALUES {', '.join(['(%s)'] * len(wanted))}) w "
        "CROSS JOIN lens_event_corrected e ON e.id = w.column1"
    )
    events = {
        pk: Neighbour(pk, _aware(connection, ts), actor, content)
        for pk, ts, actor, content in fetch_rows(cursor, sql, sorted(wanted))
        if content
    }
    plain_words = all(map(is_plain, terms))
    unmade = [i for i in ids if i in events and not (plain_words and is_plain(events[i].text))]
    if not unmade:
        return events, {}
    sql = (
        f"SELECT rowid, snippet(lens_event_fts, 0, '{_MARK_START}', '{_MARK_END}', "
        f"'{SNIPPET_ELLIPSIS}', {SNIPPET_TOKENS}) FROM lens_event_fts "
        f"WHERE lens_event_fts MATCH %s AND rowid IN ({placeholders(unmade)})"
    )
    made = dict.fromkeys(unmade, "")
    made.update(fetch_rows(cursor, sql, [fts5_expression(terms), *unmade]))
    return events, {i: _snippet(passage or events[i].text) for i, passage in made.items()}


class _Index(NamedTuple):
    """Where a kind other than events is indexed on each backend, and how its rows join."""

    fts5_table: str
    fts5_weights: tuple[float, ...]
    fts5_key: str
    fts5_join: str  # the indexed table, joined to the FTS5 table ``f``
    snippet_column: int | None  # None: no passage made in SQL
    postgres_index: str
    postgres_key: str
    postgres_join: str  # the indexed table, joined to the tsvector index ``i``
    headline: str | None  # the text a PostgreSQL passage is cut from; None: no passage


_WM_INDEX = _Index(
    fts5_table="lens_wm_fts",
    fts5_weights=SQLITE_WM_WEIGHTS,
    fts5_key="f.rowid",
    fts5_join="gem_workingmemory w ON w.id = f.rowid",
    snippet_column=0,
    postgres_index="lens_wm_index",
    postgres_key="w.id",
    postgres_join="gem_workingmemory w ON w.id = i.wm_id",
    headline="w.content",
)
_FRAGMENT_INDEX = _Index(
    fts5_table="lens_fragment_fts",
    fts5_weights=SQLITE_FRAGMENT_WEIGHTS,
    fts5_key="f.key",
    fts5_join="gem_fragment g ON g.key = f.key",
    snippet_column=None,  # the passage is the tier that holds the words (``_tier_passage``)
    postgres_index="lens_fragment_index",
    postgres_key="g.key",
    postgres_join="gem_fragment g ON g.key = i.key",
    headline=None,
)


def _working_memory(terms, filters: _Filters, limit: int) -> list[Hit]:
    connection = connections[store_for("gem", "workingmemory")]
    where = _where(connection, filters, ts="w.created_at", actor="w.actor", id_column=None)
    columns = "w.created_at, w.content, w.actor, w.type, w.status"
    return [
        Hit(
            kind="wm",
            id=wm_id,
            key=None,
            score=float(score),
            passage=_snippet(snippet),
            ts=_aware(connection, created_at),
            text=content,
            actor=actor,
            detail=f"{type_}, {status}",
        )
        for wm_id, score, snippet, created_at, content, actor, type_, status in _indexed_best(
            connection, _WM_INDEX, terms, where=where, limit=limit, columns=columns
        )
    ]


def _fragments(terms, filters: _Filters, limit: int) -> list[Hit]:
    connection = connections[store_for("gem", "fragment")]
    where = _where(connection, filters, ts="g.updated_at", actor=None, id_column=None)
    columns = "g.updated_at, g.ambient, g.recognition, g.inventory"
    hits = []
    for key, score, _, updated_at, *tiers in _indexed_best(
        connection, _FRAGMENT_INDEX, terms, where=where, limit=limit, columns=columns
    ):
        tier, passage = _tier_passage(tiers, terms)
        hits.append(
            Hit(
                kind="fragment",
                id=None,
                key=key,
                score=float(score),
                passage=passage,
                ts=_aware(connection, updated_at),
                text=_fullest_tier(tiers[::-1]),
                words=tuple(terms),
                tier=tier,
                tiers=tuple(tiers),
            )
        )
    return hits


_SUMMARY_INDEX = _Index(
    fts5_table="lens_summary_fts",
    fts5_weights=SQLITE_SUMMARY_WEIGHTS,
    fts5_key="f.rowid",
    fts5_join="mirror_summary s ON s.id = f.rowid",
    snippet_column=0,
    postgres_index="lens_summary_index",
    postgres_key="s.id",
    postgres_join="mirror_summary s ON s.id = i.summary_id",
    headline="s.content",
)


def _summaries(terms, filters: _Filters, limit: int) -> list[Hit]:
    """The best summaries, from the summaries store (those a rebuild superseded too, saying
    so): with ``event_ids``, those whose span overlaps the range."""
    connection = connections[store_for("mirror", "summary")]
    conditions, params = _where(connection, filters, ts="s.created_at", actor=None, id_column=None)
    if filters.event_ids is not None:
        first, last = filters.event_ids
        conditions += " AND s.first_event_id <= %s AND s.last_event_id >= %s"
        params += [last, first]
    columns = (
        "s.created_at, s.content, s.level, s.first_event_id, s.last_event_id, s.superseded_by_id"
    )
    rows = _indexed_best(
        connection, _SUMMARY_INDEX, terms, where=(conditions, params), limit=limit, columns=columns
    )
    hits = []
    for summary_id, score, passage, created_at, content, level, first, last, superseded in rows:
        replaced = f", superseded by #{superseded}" if superseded is not None else ""
        hits.append(
            Hit(
                kind="summary",
                id=summary_id,
                key=None,
                score=float(score),
                passage=_snippet(passage),
                ts=_aware(connection, created_at),
                text=content,
                detail=f"{level}, events {first}–{last}{replaced}",
            )
        )
    return hits


TIERS = ("ambient", "recognition", "inventory")


def _tier_passage(tiers: Sequence[str], terms: Sequence[str]) -> tuple[str, str]:
    """The tier of a fragment (``ambient, recognition, inventory``) that holds the most of the
    query's words, and its passage, the words marked: a fragment found by its key alone shows
    its first tier with text."""
    best = (-1, "", "")
    for name, text in zip(TIERS, tiers, strict=True):
        if not text.strip():
            continue
        made = _passage_made(text, terms)
        if (held := made.count(_MARK_START)) > best[0]:
            best = (held, name, _snippet(made))
    return best[1], best[2]


def passage_of(text: str, words: Sequence[str]) -> str:
    """The best passage of a text that is shown (not the indexed one: any text, cut by Python's
    letters where the index's tables are older), the words in **bold**."""
    return _snippet(_passage_made(text, words))


def _passage_made(text: str, words: Sequence[str]) -> str:
    """The best passage of ``text`` for the words, marked between the inner marks."""
    made = fts5_snippet(
        text,
        words,
        start=_MARK_START,
        end=_MARK_END,
        ellipsis=SNIPPET_ELLIPSIS,
        size=SNIPPET_TOKENS,
        plain_only=False,
    )
    return made or text


def _indexed_best(connection, index: _Index, terms, *, where, limit, columns) -> list[tuple]:
    """The best ``limit`` rows of a kind's index on the connection's backend, best first:
    ``(key, score, passage, *columns)`` (``columns`` of the indexed table), kept to the SQL
    conditions ``where = (sql, params)``."""
    best = _fts5_best if connection.vendor == "sqlite" else _postgres_best
    sql, values = best(index, terms, where=where, limit=limit, columns=columns)
    return fetch_all(connection, sql, values)


def _fts5_best(index: _Index, terms, *, where, limit, columns) -> tuple[str, list]:
    """The SQLite query of ``_indexed_best``.

    FTS5 ranks by its own ``rank`` column, set to the weighted BM25, so it sorts the matches
    itself and hands them over best first, each with the positions of its matched words: the
    snippets and the indexed rows (and the filters on them) are then made for the rows the
    LIMIT keeps alone, without looking any row up again (``ORDER BY bm25(…)`` would make a
    snippet, and follow the join, for every match before sorting)."""
    conditions, params = where
    table = index.fts5_table
    rank = f"bm25({', '.join(str(w) for w in index.fts5_weights)})"
    passage = (
        "NULL"
        if index.snippet_column is None
        else f"snippet({table}, {index.snippet_column}, '{_MARK_START}', '{_MARK_END}', "
        f"'{SNIPPET_ELLIPSIS}', {SNIPPET_TOKENS})"
    )
    sql = (
        f"SELECT {index.fts5_key}, -f.rank, {passage}, {columns} "
        f"FROM {table} f CROSS JOIN {index.fts5_join} "
        f"WHERE {table} MATCH %s AND f.rank MATCH '{rank}'{conditions} ORDER BY f.rank LIMIT %s"
    )
    return sql, [fts5_expression(terms), *params, limit]


def _postgres_best(index: _Index, terms, *, where, limit, columns) -> tuple[str, list]:
    """The PostgreSQL query of ``_indexed_best``: a weighted ``tsvector`` index ``i``, the
    passage cut from the text ``index.headline``."""
    conditions, params = where
    key = index.postgres_key
    passage = (
        "NULL"
        if index.headline is None
        else f"ts_headline('english', {index.headline}, q, '{_HEADLINE}')"
    )
    sql = (
        f"SELECT {key}, ts_rank(%s::float4[], i.document, q) AS score, {passage}, {columns} "
        f"FROM {index.postgres_index} i JOIN {index.postgres_join}, to_tsquery('english', %s) q "
        f"WHERE i.document @@ q{conditions} ORDER BY score DESC, {key} LIMIT %s"
    )
    return sql, [POSTGRES_WEIGHTS, tsquery_expression(terms), *params, limit]


_HEADLINE = f"StartSel={_MARK_START}, StopSel={_MARK_END}, MaxWords={SNIPPET_TOKENS}, MinWords=10"


def _snippet(raw: str) -> str:
    """The passage without tag markup, matched words in bold, whitespace tidied."""
    text = untagged(raw)
    text = text.replace(f"{_MARK_END} {_MARK_START}", " ")
    return text.replace(_MARK_START, MARK_OPEN).replace(_MARK_END, MARK_CLOSE)


def _fullest_tier(tiers: Sequence[str]) -> str:
    """The first tier with text of ``(inventory, recognition, ambient)``."""
    for tier in tiers:
        if text := tier.strip():
            return text
    return ""


def _aware(connection, value: datetime | str) -> datetime:
    """A timestamp read by a bare cursor, as the ORM gives it: aware, in the store's zone.
    (``timezone.make_aware`` and ``is_naive`` cost as much again, for a few dozen a search.)"""
    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    if value.utcoffset() is None:
        return value.replace(tzinfo=connection.timezone)
    return value


SEARCH_RECALL_HITS = 3  # distinct memories a search(…) in a reply brings into the next turn
SEARCH_RECALL_POOL = 4  # hits read for each of them: neighbouring hits join one passage


def search_recalled(queries: Sequence[str], *, before_event: int) -> list[RecalledItem]:
    """The best hits of each ``search(…)`` the companion wrote, as entries of the next turn's
    Recalled section (the assembler keeps them within the recall budget). Events from the
    message being answered on are left out (it is in the Message section). An event comes with
    the turns around it, and event hits whose turns overlap or meet are one passage: the same
    exchange is never shown twice, and the ``SEARCH_RECALL_HITS`` entries of a search are
    distinct memories. A query that finds nothing says so."""
    items = []
    for query in queries:
        label = f'search "{" ".join(query.split())}"'
        try:
            hits = search(
                query,
                limit=SEARCH_RECALL_HITS * SEARCH_RECALL_POOL,
                event_ids=(0, before_event - 1),
            )
        except SearchError as error:
            items.append(RecalledItem("search", label, str(error)))
            continue
        if not hits:
            items.append(RecalledItem("search", label, "Nothing matches."))
        for ref, text in _distinct_memories(hits, SEARCH_RECALL_HITS):
            items.append(RecalledItem(ref, label, text))
    return items


def _distinct_memories(hits: Sequence[Hit], wanted: int) -> list[tuple[str, str]]:
    """The best ``wanted`` distinct memories of the hits, best first, as ``(ref, text)``: an
    event hit whose turns overlap or meet those of a passage already taken joins that passage
    (its turns added, in order), and a hit after the ``wanted``-th memory is left."""
    memories: list[tuple[str, Hit | None, dict[int, Neighbour]]] = []
    for hit in hits:
        if hit.kind != "event":
            if len(memories) < wanted:
                memories.append((hit.ref, hit, {}))
            continue
        turns = {turn.id: turn for turn in (*hit.before, *hit.after)}
        turns[hit.id] = Neighbour(hit.id, hit.ts, hit.actor, hit.text)
        joined = next(
            (
                passage
                for _, first, passage in memories
                if first is None
                and min(passage) - 1 <= max(turns)
                and min(turns) <= max(passage) + 1
            ),
            None,
        )
        if joined is not None:
            joined.update(turns)
        elif len(memories) < wanted:
            memories.append((hit.ref, None, turns))
    return [
        (ref, _passage_text(passage) if hit is None else _other_text(hit))
        for ref, hit, passage in memories
    ]


def _other_text(hit: Hit) -> str:
    detail = f" ({hit.detail})" if hit.detail else ""
    return f"{hit.text}{detail}"


def _passage_text(turns: dict[int, Neighbour]) -> str:
    ordered = [turns[event_id] for event_id in sorted(turns)]
    when = timezone.localtime(ordered[0].ts).strftime("%Y-%m-%d %H:%M")
    lines = [f"{turn.actor or 'unknown'}: {' '.join(turn.text.split())}" for turn in ordered]
    return f"{when}\n" + "\n".join(lines)
