"""Recall: exact fragment keys to fragment text, delivered into the next turn's context.

Deep (the default) reads the inventory tier and falls back to recognition, then ambient;
shallow reads recognition, then ambient. Each recalled fragment brings its neighbours (edges
either way) at ambient depth. Keys are exact, never fuzzy; an unknown key says so, so the
companion knows the lookup failed rather than guessing. Items come back in priority order —
the asked-for fragments first, then neighbours — and the assembler trims them to the budget.
"""

from collections.abc import Sequence

from gem.models import Fragment, FragmentEdge
from heart.assemble import RecalledItem
from heart.parse import Recall

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
    found = list(fragments)
    outgoing = FragmentEdge.objects.filter(source__in=found).values_list(
        "target", "target__ambient"
    )
    incoming = FragmentEdge.objects.filter(target__in=found).values_list(
        "source", "source__ambient"
    )
    for key, ambient in [*outgoing, *incoming]:
        if key in seen or not ambient.strip():
            continue
        seen.add(key)
        neighbours.append(RecalledItem(key, "ambient", ambient.strip()))
    return asked + neighbours
