"""Mira's Memory Query API (seed 003) over events, working memory and fragments.

Filters (all optional, all must hold)
    ``since``/``until``   ISO dates: events said, working memory created, fragments last updated
                          in ``[since, until)``. ``last_n_days``: since that many days ago
                          (with ``since`` too, the later of the two counts).
    ``contains``          full-text (``lens.search``, stemmed, any word; the 100 best matches).
    ``tags``              every one of them: an event's tags (display, identity, knowledge);
                          a working-memory item's type and the fragment keys it names.
                          Fragments have no tags, so they drop out.
    ``type``              a working-memory type (feeling, thought, …), ``event`` or ``fragment``.
    ``min_importance``/``max_importance``  0–1, working memory only (others have none).
    ``related_to``        ``event:12``, ``wm:3`` or ``fragment:fairy``: what it is linked to —
                          a fragment's edges, the working memory that names it and the events it
                          was compiled from; an item's fragments and source event; an event's
                          working memory and the fragments compiled from it.
    ``mentions``          a name: in the text (any case), or the speaker.
    ``emotion``           by working memory's valence: positive (≥ 0.3), negative (≤ -0.3),
                          neutral (between), intense (|valence| ≥ 0.7). Working memory only.
    ``include_archived``  working memory that is no longer active (resolved, dropped, decayed,
                          superseded) too, and the archive's (docs/archive.md): read whole and
                          filtered here, so slower; ``contains`` matches its items by their
                          meaning words, without a relevance. Events and fragments are never
                          archived.
Results
    ``order_by`` date (newest first), importance (highest first; items without one last) or
    relevance (needs ``contains``); the default is relevance with ``contains``, else date.
    ``limit`` 1–100, default 10.
"""

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta

from django.db.models import Q
from django.utils import timezone

from events.models import Correction, Event, EventTag
from events.selectors import as_corrected
from gem.archive_store import archive_read
from gem.meaning import meaning_words
from gem.models import (
    Fragment,
    FragmentEdge,
    FragmentSource,
    WorkingMemory,
    WorkingMemoryRef,
    WorkingMemoryStatus,
    WorkingMemoryType,
)
from lens.search import MAX_LIMIT, SearchError, search

DEFAULT_LIMIT = 10
ORDERS = ("date", "importance", "relevance")
EMOTIONS = ("positive", "negative", "neutral", "intense")
FEELING_LEANING, INTENSE = 0.3, 0.7
TYPES = (*WorkingMemoryType.values, "event", "fragment")

QUERY_PARAMETERS = {
    "since": "ISO date or date and time",
    "until": "ISO date or date and time",
    "last_n_days": "whole number of days back from now",
    "contains": "words to search for (full text)",
    "tags": "comma-separated; every one must be present",
    "type": f"one of {', '.join(TYPES)}",
    "min_importance": "0 to 1 (working memory)",
    "max_importance": "0 to 1 (working memory)",
    "related_to": "event:ID, wm:ID or fragment:KEY",
    "mentions": "a name",
    "emotion": f"one of {', '.join(EMOTIONS)} (working memory)",
    "limit": f"1 to {MAX_LIMIT}, default {DEFAULT_LIMIT}",
    "include_archived": "true or false: working memory that is no longer active too",
    "order_by": f"one of {', '.join(ORDERS)}",
}


class QueryError(ValueError):
    """A query that cannot be run; the message names the parameter and what is wrong."""


@dataclass(frozen=True)
class MemoryQuery:
    since: datetime | None = None
    until: datetime | None = None
    last_n_days: int | None = None
    contains: str | None = None
    tags: tuple[str, ...] = ()
    type: str | None = None
    min_importance: float | None = None
    max_importance: float | None = None
    related_to: str | None = None
    mentions: str | None = None
    emotion: str | None = None
    limit: int = DEFAULT_LIMIT
    include_archived: bool = False
    order_by: str | None = None

    def __post_init__(self):
        if not 1 <= self.limit <= MAX_LIMIT:
            raise QueryError(f"limit: must be from 1 to {MAX_LIMIT}, not {self.limit}")
        if self.last_n_days is not None and self.last_n_days < 1:
            raise QueryError(f"last_n_days: must be at least 1, not {self.last_n_days}")
        for name in ("min_importance", "max_importance"):
            value = getattr(self, name)
            if value is not None and not 0 <= value <= 1:
                raise QueryError(f"{name}: must be from 0 to 1, not {value}")
        if (self.min_importance or 0) > (1 if self.max_importance is None else self.max_importance):
            raise QueryError("min_importance: is above max_importance")
        if self.since and self.until and self.since >= self.until:
            raise QueryError("since: must come before until")
        if self.type is not None and self.type not in TYPES:
            raise QueryError(f"type: {self.type!r} is not one of {', '.join(TYPES)}")
        if self.emotion is not None and self.emotion not in EMOTIONS:
            raise QueryError(f"emotion: {self.emotion!r} is not one of {', '.join(EMOTIONS)}")
        if self.order_by is not None and self.order_by not in ORDERS:
            raise QueryError(f"order_by: {self.order_by!r} is not one of {', '.join(ORDERS)}")
        if self.order_by == "relevance" and not self.contains:
            raise QueryError("order_by: relevance needs words in contains")
        if self.related_to is not None:
            _reference(self.related_to)


@dataclass(frozen=True)
class Entry:
    kind: str  # event | wm | fragment
    id: int | None
    key: str | None
    type: str  # event, fragment, or the working-memory type
    ts: datetime | None
    text: str
    actor: str = ""
    tags: tuple[str, ...] = ()
    importance: float | None = None
    valence: float | None = None
    status: str = ""
    relevance: float | None = None
    archived: bool = False
    sort_ts: datetime = field(default=datetime.min.replace(tzinfo=UTC), repr=False)

    @property
    def ref(self) -> str:
        return f"{self.kind}:{self.key if self.kind == 'fragment' else self.id}"

    def as_json(self) -> dict:
        return {
            "ref": self.ref,
            "kind": self.kind,
            "id": self.id,
            "key": self.key,
            "type": self.type,
            "timestamp": self.ts.isoformat() if self.ts else None,
            "content": self.text,
            "actor": self.actor,
            "tags": list(self.tags),
            "importance": self.importance,
            "emotional_valence": self.valence,
            "status": self.status,
            "relevance": self.relevance,
            "archived": self.archived,
        }


def query_from_params(params: Mapping[str, str]) -> MemoryQuery:
    """A query from text parameters (a URL's query string, command options)."""
    if unknown := sorted(set(params) - set(QUERY_PARAMETERS)):
        raise QueryError(
            f"{unknown[0]}: not a query parameter (known: {', '.join(QUERY_PARAMETERS)})"
        )
    values: dict = {}
    for name, raw in params.items():
        text = str(raw).strip()
        if text == "":
            continue
        if name in ("since", "until"):
            values[name] = _moment(name, text)
        elif name in ("last_n_days", "limit"):
            values[name] = _whole(name, text)
        elif name in ("min_importance", "max_importance"):
            values[name] = _number(name, text)
        elif name == "include_archived":
            values[name] = _boolean(name, text)
        elif name == "tags":
            values[name] = tuple(tag.strip() for tag in text.split(",") if tag.strip())
        else:
            values[name] = text
    return MemoryQuery(**values)


def memory_query(query: MemoryQuery, *, now: datetime | None = None) -> list[Entry]:
    now = now or timezone.now()
    since = query.since
    if query.last_n_days is not None:
        recent = now - timedelta(days=query.last_n_days)
        since = max(since, recent) if since else recent
    kinds = _kinds(query)
    relevance: dict[str, float] | None = None
    if query.contains:
        try:
            hits = search(
                query.contains,
                kinds=kinds,
                limit=MAX_LIMIT,
                since=since,
                until=query.until,
                words_only=True,
            )
        except SearchError as error:
            raise QueryError(f"contains: {error}") from error
        relevance = {hit.ref: hit.score for hit in hits}
    related = _related(query.related_to) if query.related_to else None
    context = _Context(query=query, since=since, relevance=relevance, related=related)
    entries: list[Entry] = []
    if "event" in kinds:
        entries += _events(context)
    if "wm" in kinds:
        entries += _working_memory(context)
    if "fragment" in kinds:
        entries += _fragments(context)
    order = query.order_by or ("relevance" if query.contains else "date")
    if order == "relevance":
        entries.sort(key=lambda e: (-(e.relevance or 0.0), _newest(e)))
    elif order == "importance":
        entries.sort(key=lambda e: (e.importance is None, -(e.importance or 0.0), _newest(e)))
    else:
        entries.sort(key=_newest)
    return entries[: query.limit]


# --- per kind -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Context:
    query: MemoryQuery
    since: datetime | None
    relevance: dict[str, float] | None
    related: dict[str, set] | None

    def ids(self, kind: str) -> set | None:
        """The ids (keys) the text and relation filters allow, or None when they allow all."""
        allowed = None
        if self.relevance is not None:
            prefix = f"{kind}:"
            allowed = {
                ref[len(prefix) :] if kind == "fragment" else int(ref[len(prefix) :])
                for ref in self.relevance
                if ref.startswith(prefix)
            }
        if self.related is not None:
            linked = self.related.get(kind, set())
            allowed = linked if allowed is None else allowed & linked
        return allowed

    def relevance_of(self, ref: str) -> float | None:
        return None if self.relevance is None else self.relevance.get(ref)


def _kinds(query: MemoryQuery) -> list[str]:
    if query.type == "event":
        return ["event"]
    if query.type == "fragment":
        return ["fragment"]
    wm_only = (
        query.type is not None
        or query.emotion is not None
        or query.min_importance is not None
        or query.max_importance is not None
    )
    if wm_only:
        return ["wm"]
    return ["event", "wm"] if query.tags else ["event", "wm", "fragment"]


def _within(rows, field: str, context: _Context):
    """``rows`` whose ``field`` lies in the query's time range ``[since, until)``."""
    if context.since:
        rows = rows.filter(**{f"{field}__gte": context.since})
    if context.query.until:
        rows = rows.filter(**{f"{field}__lt": context.query.until})
    return rows


def _events(context: _Context) -> list[Entry]:
    query = context.query
    events = Event.objects.all()
    events = _within(events, "ts", context)
    for tag in query.tags:
        events = events.filter(tags__tag=tag)
    if query.mentions:
        corrected_to = Correction.objects.filter(
            Q(text__icontains=query.mentions) | Q(actor__iexact=query.mentions)
        ).values("event_id")
        events = events.filter(
            Q(content__icontains=query.mentions)
            | Q(actor__iexact=query.mentions)
            | Q(pk__in=corrected_to)
        )
    if (ids := context.ids("event")) is not None:
        events = events.filter(pk__in=ids)
    # Read as their corrections leave them: a retracted one left out, one whose corrected words
    # no longer hold what was asked for too.
    rows = [
        row
        for row in as_corrected(
            list(
                events.order_by("-ts", "-pk").values_list("pk", "ts", "actor", "content")[
                    : _fetch_limit(context)
                ]
            )
        )
        if not query.mentions
        or query.mentions.lower() in row[3].lower()
        or query.mentions.lower() == row[2].lower()
    ]
    tags: dict[int, list[str]] = {}
    for event_id, tag in EventTag.objects.filter(event_id__in=[r[0] for r in rows]).values_list(
        "event_id", "tag"
    ):
        tags.setdefault(event_id, []).append(tag)
    return [
        Entry(
            kind="event",
            id=pk,
            key=None,
            type="event",
            ts=ts,
            text=content,
            actor=actor,
            tags=tuple(sorted(tags.get(pk, []))),
            relevance=context.relevance_of(f"event:{pk}"),
            sort_ts=ts,
        )
        for pk, ts, actor, content in rows
    ]


def _working_memory(context: _Context) -> list[Entry]:
    query = context.query
    items = WorkingMemory.objects.all()
    if not query.include_archived:
        items = items.filter(status=WorkingMemoryStatus.ACTIVE)
    items = _within(items, "created_at", context)
    if query.type:
        items = items.filter(type=query.type)
    for tag in query.tags:
        items = items.filter(Q(type=tag) | Q(refs__fragment_id=tag))
    if query.min_importance is not None:
        items = items.filter(importance__gte=query.min_importance)
    if query.max_importance is not None:
        items = items.filter(importance__lte=query.max_importance)
    if query.emotion == "positive":
        items = items.filter(valence__gte=FEELING_LEANING)
    elif query.emotion == "negative":
        items = items.filter(valence__lte=-FEELING_LEANING)
    elif query.emotion == "neutral":
        items = items.filter(valence__gt=-FEELING_LEANING, valence__lt=FEELING_LEANING)
    elif query.emotion == "intense":
        items = items.filter(Q(valence__gte=INTENSE) | Q(valence__lte=-INTENSE))
    if query.mentions:
        items = items.filter(
            Q(content__icontains=query.mentions)
            | Q(subject__icontains=query.mentions)
            | Q(actor__iexact=query.mentions)
        )
    if (ids := context.ids("wm")) is not None:
        items = items.filter(pk__in=ids)
    order = ("-importance", "-created_at") if query.order_by == "importance" else ("-created_at",)
    rows = list(items.distinct().order_by(*order, "-pk")[: _fetch_limit(context)])
    refs: dict[int, list[str]] = {}
    for wm_id, key in WorkingMemoryRef.objects.filter(wm__in=[r.pk for r in rows]).values_list(
        "wm_id", "fragment_id"
    ):
        refs.setdefault(wm_id, []).append(key)
    archived = _archived(context) if query.include_archived else []
    return archived + [
        Entry(
            kind="wm",
            id=item.pk,
            key=None,
            type=item.type,
            ts=item.created_at,
            text=item.content,
            actor=item.actor,
            tags=(item.type, *sorted(refs.get(item.pk, []))),
            importance=item.importance,
            valence=item.valence,
            status=item.status,
            relevance=context.relevance_of(f"wm:{item.pk}"),
            sort_ts=item.created_at,
        )
        for item in rows
    ]


def _archived(context: _Context) -> list[Entry]:
    """The archive's working memory that the query lets through."""
    words = set(meaning_words(context.query.contains)) if context.query.contains else None
    entries = []
    for row in archive_read().values():
        created = datetime.fromisoformat(row["created_at"])
        if not _archived_holds(row, created, context, words):
            continue
        entries.append(
            Entry(
                kind="wm",
                id=row["id"],
                key=None,
                type=row["type"],
                ts=created,
                text=row["content"],
                actor=row["actor"],
                tags=(row["type"], *row["fragments"]),
                importance=row["importance"],
                valence=row["valence"],
                status=row["status"],
                archived=True,
                sort_ts=created,
            )
        )
    return entries


def _archived_holds(row: dict, created: datetime, context: _Context, words: set | None) -> bool:
    """Whether an archived row passes the filters ``_working_memory`` gives the database."""
    query = context.query
    valence, importance = row["valence"], row["importance"]
    text = f"{row['subject']} {row['content']}"
    mentions = (query.mentions or "").casefold()
    feels = {
        None: True,
        "positive": valence >= FEELING_LEANING,
        "negative": valence <= -FEELING_LEANING,
        "neutral": -FEELING_LEANING < valence < FEELING_LEANING,
        "intense": abs(valence) >= INTENSE,
    }
    related = None if context.related is None else context.related.get("wm", set())
    return (
        (context.since is None or created >= context.since)
        and (query.until is None or created < query.until)
        and (query.type is None or row["type"] == query.type)
        and set(query.tags) <= {row["type"], *row["fragments"]}
        and (query.min_importance is None or importance >= query.min_importance)
        and (query.max_importance is None or importance <= query.max_importance)
        and feels[query.emotion]
        and (not mentions or mentions in text.casefold() or mentions == row["actor"].casefold())
        and (words is None or bool(words & set(meaning_words(text))))
        and (related is None or row["id"] in related)
    )


def _fragments(context: _Context) -> list[Entry]:
    query = context.query
    fragments = Fragment.objects.all()
    fragments = _within(fragments, "updated_at", context)
    if query.mentions:
        name = query.mentions
        fragments = fragments.filter(
            Q(key__iexact=name)
            | Q(ambient__icontains=name)
            | Q(recognition__icontains=name)
            | Q(inventory__icontains=name)
        )
    if (keys := context.ids("fragment")) is not None:
        fragments = fragments.filter(pk__in=keys)
    rows = list(fragments.order_by("-updated_at", "key")[: _fetch_limit(context)])
    return [
        Entry(
            kind="fragment",
            id=None,
            key=fragment.key,
            type="fragment",
            ts=fragment.updated_at,
            text=fragment.ambient or fragment.recognition or fragment.inventory,
            relevance=context.relevance_of(f"fragment:{fragment.key}"),
            sort_ts=fragment.updated_at,
        )
        for fragment in rows
    ]


def _fetch_limit(context: _Context) -> int:
    """Rows each kind reads: the limit, or every text match when relevance orders them."""
    return MAX_LIMIT if context.relevance is not None else context.query.limit


def _newest(entry: Entry) -> tuple:
    return (-entry.sort_ts.timestamp(), entry.kind, str(entry.key or entry.id))


# --- related_to ---------------------------------------------------------------------------------


def _reference(text: str) -> tuple[str, str | int]:
    kind, _, ident = text.partition(":")
    if kind in ("event", "wm") and ident.isdigit():
        return kind, int(ident)
    if kind == "fragment" and ident:
        return kind, ident
    raise QueryError(f"related_to: {text!r} is not event:ID, wm:ID or fragment:KEY")


def _related(text: str) -> dict[str, set]:
    kind, ident = _reference(text)
    if kind == "fragment":
        if not Fragment.objects.filter(pk=ident).exists():
            raise QueryError(f"related_to: no fragment {ident!r}")
        edges = FragmentEdge.objects.filter(Q(source=ident) | Q(target=ident))
        return {
            "fragment": {k for pair in edges.values_list("source", "target") for k in pair}
            - {ident},
            "wm": set(WorkingMemoryRef.objects.filter(fragment=ident).values_list("wm", flat=True)),
            "event": set(
                FragmentSource.objects.filter(fragment=ident).values_list("event_id", flat=True)
            ),
        }
    if kind == "wm":
        item = WorkingMemory.objects.filter(pk=ident).first()
        if item is None:
            raise QueryError(f"related_to: no working-memory item {ident}")
        return {
            "fragment": set(item.refs.values_list("fragment", flat=True)),
            "event": {item.event_id} if item.event_id else set(),
            "wm": set(),
        }
    if not Event.objects.filter(pk=ident).exists():
        raise QueryError(f"related_to: no event {ident}")
    return {
        "wm": set(WorkingMemory.objects.filter(event_id=ident).values_list("pk", flat=True)),
        "fragment": set(
            FragmentSource.objects.filter(event_id=ident).values_list("fragment", flat=True)
        ),
        "event": set(),
    }


# --- parameter readers ----------------------------------------------------------------------------


def _moment(name: str, text: str) -> datetime:
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        try:
            moment = datetime.combine(date.fromisoformat(text), datetime.min.time())
        except ValueError:
            raise QueryError(f"{name}: {text!r} is not an ISO date (2026-03-01)") from None
    return moment if timezone.is_aware(moment) else timezone.make_aware(moment)


def _whole(name: str, text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise QueryError(f"{name}: {text!r} is not a whole number") from None


def _number(name: str, text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise QueryError(f"{name}: {text!r} is not a number") from None
    if value != value:  # NaN
        raise QueryError(f"{name}: {text!r} is not a number")
    return value


def _boolean(name: str, text: str) -> bool:
    lowered = text.lower()
    if lowered in ("true", "1", "yes"):
        return True
    if lowered in ("false", "0", "no"):
        return False
    raise QueryError(f"{name}: {text!r} is not true or false")
