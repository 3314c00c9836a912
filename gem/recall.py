"""Recall: exact fragment keys to fragment text, delivered into the next turn's context.

Deep (the default) reads the inventory tier and falls back to recognition, then ambient;
shallow reads recognition, then ambient. Each recalled fragment brings its neighbours (edges
either way) at ambient depth. Keys are exact, never fuzzy; an unknown key says so, so the
companion knows the lookup failed rather than guessing. Items come back in priority order —
the asked-for fragments first, then neighbours — and the assembler trims them to the budget.
"""

from collections.abc import Sequence
from dataclasses import replace

from django.db.models import Q

from gem.models import Fragment, FragmentEdge
from gem.recalled import Recall, RecalledItem
from gem.waking import Named

DEEP_TIERS = ("inventory", "recognition", "ambient")
SHALLOW_TIERS = ("recognition", "ambient")
MISSING = "missing"


def recall_items(requests: Sequence[Recall]) -> list[RecalledItem]:
    if not requests:
        return []
    keys = [request.key for request in requests]
    fragments = Fragment.objects.in_bulk(keys)
    asked, neighbours = [], []
    for request in requests:
        fragment = fragments.get(request.key)
        if fragment is None:
            asked.append(RecalledItem(request.key, MISSING, "Nothing is stored under this key."))
            continue
        tiers = DEEP_TIERS if request.deep else SHALLOW_TIERS
        tier = next((t for t in tiers if getattr(fragment, t).strip()), tiers[-1])
        asked.append(RecalledItem(fragment.key, tier, getattr(fragment, tier).strip()))
    seen = set(keys)
    found = set(fragments)
    # Edges either way in one query, in the edges' order; outgoing ones come first.
    edges = FragmentEdge.objects.filter(Q(source__in=found) | Q(target__in=found)).values_list(
        "source", "target", "source__ambient", "target__ambient"
    )
    outgoing, incoming = [], []
    for source, target, source_ambient, target_ambient in edges:
        if source in found:
            outgoing.append((target, target_ambient))
        if target in found:
            incoming.append((source, source_ambient))
    for key, ambient in [*outgoing, *incoming]:
        if key in seen or not ambient.strip():
            continue
        seen.add(key)
        neighbours.append(RecalledItem(key, "ambient", ambient.strip()))
    return asked + neighbours


def woken_items(named: Sequence[Named], items: Sequence[RecalledItem]) -> list[RecalledItem]:
    """The fragments a message names (``gem.waking.names_found``, in its order) as a shallow
    recall of them brought them (``items``: each at its recognition tier, ambient when that is
    empty, then their neighbours at ambient depth), each saying what woke it."""
    said = {name.key: name.said for name in named}
    return [
        replace(
            item,
            why=f"woken by “{said[item.key]}” in the message"
            if item.key in said
            else "next to a fragment the message names",
        )
        for item in items
        if item.tier != MISSING
    ]
