"""What the Lens shows: a fragment, what connects several, working memory, summaries.

Everything here reads; nothing writes. Each view is built once as plain data (used by the
pages in ``lens/views.py``) and written as Markdown for ``manage.py lens``. A fragment's
Markdown is the draft format of ``gem/draft.py``: read back as a draft it changes nothing.
"""

import difflib
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from itertools import combinations
from typing import Any

from django.db.models import Q
from django.utils import timezone

from gem.draft import (
    TIERS,
    Draft,
    DraftEdge,
    DraftFragment,
    draft_render,
    draft_written,
    edges_ordered,
)
from gem.models import Fragment, FragmentEdge, FragmentSource, WorkingMemoryRef
from gem.selectors import gem_current, working_memory_scored
from gem.state import turn_counter_current
from mirror.models import Summary
from silentstar.words import counted

DEPTH_DEFAULT = 4
SUMMARIES_DEFAULT = 20
CLOSE_MATCHES = 3


class LensError(ValueError):
    """A request the Lens cannot answer (an unknown key), said so a person can act on it."""


def keys_checked(keys: Iterable[str]) -> list[str]:
    """The keys in order without repeats; unknown ones are a LensError naming them and the
    nearest keys the Gem has."""
    wanted = list(dict.fromkeys(keys))
    if not wanted:
        raise LensError("Name at least one fragment key.")
    known = set(Fragment.objects.filter(key__in=wanted).values_list("key", flat=True))
    unknown = [key for key in wanted if key not in known]
    if unknown:
        every_key = list(Fragment.objects.values_list("key", flat=True))
        lines = []
        for key in unknown:
            near = difflib.get_close_matches(key, every_key, n=CLOSE_MATCHES)
            hint = f" (did you mean {', '.join(near)}?)" if near else ""
            lines.append(f"No fragment “{key}”{hint}.")
        raise LensError(" ".join(lines))
    return wanted


# --- One fragment -----------------------------------------------------------------------------


def fragment_drafts(keys: list[str]) -> list[DraftFragment]:
    """Known fragments with every tier, their triggers (when they have any), every edge (both
    ways), sources and working-memory links, in the order asked; a fixed number of queries
    however many keys."""
    fragments = Fragment.objects.in_bulk(keys)
    edges: dict[str, list[DraftEdge]] = {key: [] for key in keys}
    for source, target, relation in FragmentEdge.objects.filter(
        Q(source_id__in=keys) | Q(target_id__in=keys)
    ).values_list("source_id", "target_id", "relation"):
        for key in {source, target} & edges.keys():
            edges[key].append(DraftEdge(source, target, relation))
    sources: dict[str, list[int]] = {key: [] for key in keys}
    for key, event_id in (
        FragmentSource.objects.filter(fragment_id__in=keys)
        .order_by("event_id")
        .values_list("fragment_id", "event_id")
    ):
        sources[key].append(event_id)
    links: dict[str, list[str]] = {key: [] for key in keys}
    for ref in (
        WorkingMemoryRef.objects.filter(fragment_id__in=keys)
        .select_related("wm")
        .order_by("-wm__refreshed_at", "-wm_id")
    ):
        wm = ref.wm
        links[ref.fragment_id].append(
            f"- wm {wm.pk} · {wm.type} · {wm.status}: {one_line(wm.content)}"
        )
    drafts = []
    for key in keys:
        notes = {}
        if sources[key]:
            notes["sources"] = "- events " + ", ".join(str(e) for e in sources[key])
        if links[key]:
            notes["working memory"] = "\n".join(links[key])
        drafts.append(
            DraftFragment(
                key=key,
                tiers={tier: getattr(fragments[key], tier) for tier in TIERS},
                triggers=list(fragments[key].triggers) or None,
                edges=edges_ordered(key, edges[key]),
                notes=notes,
            )
        )
    return drafts


def fragment_markdown(key: str) -> str:
    """``manage.py lens KEY``: the fragment as a draft, saying what it was written against."""
    return draft_render(draft_written(Draft(fragments=fragment_drafts(keys_checked([key])))))


def fragments_listed():
    """Every fragment's key and ambient tier, by key regardless of case: the Lens's index."""
    return Fragment.objects.order_by("key_folded", "key").values_list("key", "ambient")


def one_line(text: str) -> str:
    """Text on one line (a list item cannot hold a line break)."""
    return " ".join(text.split())


@dataclass(frozen=True)
class Neighbour:
    """A fragment an edge connects to another, seen from that other one."""

    key: str
    relation: str
    outgoing: bool  # the edge goes from the fragment to this neighbour
    ambient: str


def neighbours(fragment: DraftFragment) -> list[Neighbour]:
    """The fragments its edges connect, in the order of its edges, with their ambient tier."""
    edges = fragment.edges or []
    others = [e.target if e.source == fragment.key else e.source for e in edges]
    ambient = dict(Fragment.objects.filter(key__in=others).values_list("key", "ambient"))
    return [
        Neighbour(other, edge.relation, edge.source == fragment.key, ambient.get(other, ""))
        for edge, other in zip(edges, others, strict=True)
    ]


# --- What connects several --------------------------------------------------------------------


@dataclass(frozen=True)
class Step:
    """One key along a path, with the edge that led there (None for the first) and whether that
    edge was followed the way it points."""

    key: str
    edge: DraftEdge | None = None
    forward: bool = True


@dataclass(frozen=True)
class Path:
    """A shortest chain of edges from one key to another, edges followed either way."""

    keys: list[str]
    edges: list[DraftEdge]

    @property
    def steps(self) -> list[Step]:
        steps = [Step(self.keys[0])]
        for here, edge, there in zip(self.keys[:-1], self.edges, self.keys[1:], strict=True):
            steps.append(Step(there, edge, edge.source == here))
        return steps

    def text(self) -> str:
        out = ""
        for step in self.steps:
            relation = step.edge.relation if step.edge else ""
            if step.edge is None:
                out += step.key
            elif step.forward:
                out += f" —{relation}→ {step.key}" if relation else f" → {step.key}"
            else:
                out += f" ←{relation}— {step.key}" if relation else f" ← {step.key}"
        return out


@dataclass
class Intersection:
    keys: list[str]
    depth: int
    paths: list[Path] = field(default_factory=list)
    unconnected: list[tuple[str, str]] = field(default_factory=list)
    common: list[str] = field(default_factory=list)  # reached from every key within depth
    fragments: list[DraftFragment] = field(default_factory=list)

    @property
    def connected(self) -> bool:
        return not self.unconnected


class _Graph:
    """The edges around some fragments, fetched a ring at a time and kept."""

    def __init__(self):
        self.adjacent: dict[str, list[tuple[str, DraftEdge]]] = {}

    def expand(self, keys: Iterable[str]) -> None:
        missing = {key for key in keys if key not in self.adjacent}
        if not missing:
            return
        for key in missing:
            self.adjacent[key] = []
        for source, target, relation in FragmentEdge.objects.filter(
            Q(source_id__in=missing) | Q(target_id__in=missing)
        ).values_list("source_id", "target_id", "relation"):
            edge = DraftEdge(source, target, relation)
            if source in missing:
                self.adjacent[source].append((target, edge))
            if target in missing:
                self.adjacent[target].append((source, edge))
        for key in missing:
            self.adjacent[key].sort(key=lambda pair: (pair[0], pair[1].source))

    def reach(self, start: str, depth: int) -> dict[str, tuple[str, DraftEdge] | None]:
        """Breadth-first from ``start`` up to ``depth`` edges: each key reached, with the key and
        edge it was reached by (None for the start)."""
        came_from: dict[str, tuple[str, DraftEdge] | None] = {start: None}
        ring = [start]
        for _ in range(depth):
            self.expand(ring)
            next_ring = []
            for key in ring:
                for other, edge in self.adjacent[key]:
                    if other not in came_from:
                        came_from[other] = (key, edge)
                        next_ring.append(other)
            if not next_ring:
                break
            ring = next_ring
        return came_from


def _path(came_from: dict[str, tuple[str, DraftEdge] | None], end: str) -> Path:
    keys, edges = [end], []
    step = came_from[end]
    while step is not None:
        previous, edge = step
        keys.append(previous)
        edges.append(edge)
        step = came_from[previous]
    return Path(keys=keys[::-1], edges=edges[::-1])


def intersection(keys: Iterable[str], *, depth: int = DEPTH_DEFAULT) -> Intersection:
    """The shortest paths between every pair of the keys (edges followed either way, at most
    ``depth`` long), the fragments every key reaches, and the fragments on the paths."""
    if depth < 1:
        raise LensError("The depth is at least 1 edge.")
    wanted = keys_checked(keys)
    if len(wanted) < 2:
        raise LensError("An intersection needs at least two different keys.")
    graph = _Graph()
    reached = {key: graph.reach(key, depth) for key in wanted}
    result = Intersection(keys=wanted, depth=depth)
    for first, second in combinations(wanted, 2):
        if second in reached[first]:
            result.paths.append(_path(reached[first], second))
        else:
            result.unconnected.append((first, second))
    everywhere = set.intersection(*(set(came) for came in reached.values())) - set(wanted)

    def distances(key: str) -> list[int]:
        return [len(_path(reached[start], key).edges) for start in wanted]

    result.common = sorted(
        everywhere, key=lambda key: (max(distances(key)), sum(distances(key)), key)
    )
    on_paths = [key for path in result.paths for key in path.keys]
    result.fragments = fragment_drafts(list(dict.fromkeys([*wanted, *on_paths])))
    return result


def intersection_markdown(keys: Iterable[str], *, depth: int = DEPTH_DEFAULT) -> str:
    """``manage.py lens K1 K2 …``: the paths first (the draft's preface), then every fragment
    on them as a draft."""
    found = intersection(keys, depth=depth)
    edges = counted(found.depth, "edge")
    lines = [f"Lens: what connects {', '.join(found.keys)} (paths of at most {edges})"]
    if found.paths:
        lines += ["", "Paths:", ""] + [f"- {path.text()}" for path in found.paths]
    if found.unconnected:
        lines.append("")
        if not found.paths:
            lines.append(f"Nothing connects them within {edges}.")
        lines += [
            f"- {first} and {second} are not connected within {edges}"
            for first, second in found.unconnected
        ]
    if found.common:
        lines += ["", "Reached from every one of them: " + ", ".join(found.common)]
    return draft_render(draft_written(Draft(fragments=found.fragments, preface="\n".join(lines))))


# --- Working memory and summaries -------------------------------------------------------------


@dataclass(frozen=True)
class Lingering:
    """An active working-memory item with its live decay score and the fragments it names."""

    row: Any  # a named tuple of gem.selectors.LINGERING_FIELDS
    score: float
    fragments: list[str]


def working_memory_lingering(*, now: datetime | None = None) -> tuple[int, list[Lingering]]:
    """The turn counter and the active working memory, strongest first, scored as the Heart
    scores it."""
    turn = turn_counter_current()
    scored = working_memory_scored(
        gem_current().working_memory, now=now or timezone.now(), current_turn=turn
    )
    links: dict[int, list[str]] = {}
    for wm_id, key in (
        WorkingMemoryRef.objects.filter(wm_id__in=[row.id for row, _ in scored])
        .order_by("fragment_id")
        .values_list("wm_id", "fragment_id")
    ):
        links.setdefault(wm_id, []).append(key)
    return turn, [Lingering(row, score, links.get(row.id, [])) for row, score in scored]


def working_memory_markdown(*, now: datetime | None = None) -> str:
    moment = now or timezone.now()
    turn, items = working_memory_lingering(now=moment)
    lines = [
        "# Working memory",
        "",
        f"{len(items)} active, strongest first; scores at turn {turn}, "
        f"{timezone.localtime(moment):%Y-%m-%d %H:%M %Z}.",
        "",
    ]
    for item in items:
        row = item.row
        about = f" · {row.subject}" if row.subject else ""
        due = f" · due {timezone.localtime(row.due):%Y-%m-%d %H:%M}" if row.due else ""
        linked = f" · fragments: {', '.join(item.fragments)}" if item.fragments else ""
        lines.append(
            f"- **{item.score:.3f}** · wm {row.id} · {row.type}{about}{due}{linked}: "
            f"{one_line(row.content)}"
        )
    if not items:
        lines.append("Nothing is lingering.")
    return "\n".join(lines) + "\n"


def summaries_recent(*, limit: int = SUMMARIES_DEFAULT) -> list[Summary]:
    """The Mirror's summaries, newest first."""
    return list(Summary.objects.order_by("-created_at", "-id")[:limit])


def summaries_markdown(*, limit: int = SUMMARIES_DEFAULT) -> str:
    summaries = summaries_recent(limit=limit)
    lines = ["# Summaries", ""]
    if summaries:
        lines += [f"The {len(summaries)} newest, newest first.", ""]
    for summary in summaries:
        superseded = (
            f" · superseded by #{summary.superseded_by_id}" if summary.superseded_by_id else ""
        )
        lines += [
            f"## {summary.level} · events {summary.first_event_id}–{summary.last_event_id}",
            "",
            f"#{summary.pk} · {timezone.localtime(summary.created_at):%Y-%m-%d %H:%M} · "
            f"{summary.tokens} tokens{superseded}",
            "",
            summary.content.strip(),
            "",
        ]
    if not summaries:
        lines.append("The Mirror has written no summaries yet.")
    return "\n".join(lines).rstrip("\n") + "\n"
