"""The fragment graph as plain data for the Anvil's picture: the whole graph while it is small,
otherwise the neighbourhood of one key to a depth."""

from dataclasses import dataclass, field

from django.db.models import Q

from gem.models import Fragment, FragmentEdge

WHOLE_GRAPH_LIMIT = 300  # fragments; above this the picture is drawn around one key
NEIGHBOURHOOD_LIMIT = 400  # fragments a neighbourhood stops growing at
DEPTH_MAX = 4


@dataclass
class Listed:
    """One fragment of the graph as its list reads: the edges leaving it and those reaching it,
    each as (relation, the other key)."""

    key: str
    out: list[tuple[str, str]] = field(default_factory=list)
    into: list[tuple[str, str]] = field(default_factory=list)


@dataclass
class Graph:
    keys: list[str] = field(default_factory=list)
    edges: list[tuple[str, str, str]] = field(default_factory=list)  # source, target, relation
    truncated: bool = False  # the neighbourhood reached NEIGHBOURHOOD_LIMIT before its depth

    @property
    def listed(self) -> list[Listed]:
        """Every fragment with its edges out and in, in the keys' order: the picture in words,
        read where a picture is too small to (a phone) or cannot be seen."""
        by_key = {key: Listed(key) for key in self.keys}
        for source, target, relation in sorted(self.edges):
            by_key[source].out.append((relation, target))
            by_key[target].into.append((relation, source))
        return list(by_key.values())


def graph_whole() -> Graph | None:
    """Every fragment and edge, or None when there are too many to draw at once."""
    if Fragment.objects.count() > WHOLE_GRAPH_LIMIT:
        return None
    return Graph(
        keys=list(Fragment.objects.order_by("key").values_list("key", flat=True)),
        edges=list(FragmentEdge.objects.values_list("source_id", "target_id", "relation")),
    )


def graph_around(key: str, *, depth: int) -> Graph:
    """The fragments within ``depth`` edges of ``key`` (either direction) and the edges among
    them; one query per step outwards."""
    depth = max(1, min(depth, DEPTH_MAX))
    seen = {key} if Fragment.objects.filter(key=key).exists() else set()
    frontier = set(seen)
    truncated = False
    for _ in range(depth):
        if not frontier:
            break
        reached = set()
        for source, target in FragmentEdge.objects.filter(
            Q(source__in=frontier) | Q(target__in=frontier)
        ).values_list("source_id", "target_id"):
            reached.update((source, target))
        frontier = reached - seen
        room = NEIGHBOURHOOD_LIMIT - len(seen)
        if len(frontier) > room:
            frontier = set(sorted(frontier)[:room])
            truncated = True
        seen |= frontier
        if truncated:
            break
    edges = FragmentEdge.objects.filter(source__in=seen, target__in=seen)
    return Graph(
        keys=sorted(seen),
        edges=list(edges.values_list("source_id", "target_id", "relation")),
        truncated=truncated,
    )
