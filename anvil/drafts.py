"""Applying a draft to the Gem: the Anvil's write path for drafts (the format is read by
``lens/draft_read.py``).

Parse, compare and write happen in one transaction on the default store: a draft that cannot
be read, or that names a fragment nobody has or a source that is not an event, raises
``DraftError`` and changes nothing. Each fragment created or changed gets an entry in the admin
log saying what changed, its new sources included.
"""

from django.contrib.admin.models import ADDITION, CHANGE
from django.db import transaction
from django.db.models import Q

from gem.models import Fragment, FragmentEdge, FragmentSource
from gem.services import TIERS, fragment_log
from lens.draft_read import DraftDiff, DraftEdge, draft_diff, draft_parse


def draft_apply(text: str, *, user) -> DraftDiff:
    """Apply a draft written by a person; returns what changed (empty when nothing did)."""
    draft = draft_parse(text)
    with transaction.atomic():
        diff = draft_diff(draft)
        if diff.is_empty:
            return diff
        new_tiers: dict[str, dict[str, str]] = {}
        for change in diff.tiers_changed:
            new_tiers.setdefault(change.key, {})[change.tier] = change.new
        created = set(diff.fragments_created)
        Fragment.objects.bulk_create(
            Fragment(key=key, **{tier: new_tiers.get(key, {}).get(tier, "") for tier in TIERS})
            for key in diff.fragments_created
        )
        changed = {key: tiers for key, tiers in new_tiers.items() if key not in created}
        for fragment in Fragment.objects.select_for_update().filter(key__in=changed):
            for tier, text_new in changed[fragment.key].items():
                setattr(fragment, tier, text_new)
            fragment.save(update_fields=[*changed[fragment.key], "updated_at"])
        if diff.edges_removed:
            removed = Q()
            for edge in diff.edges_removed:
                removed |= Q(source_id=edge.source, target_id=edge.target)
            FragmentEdge.objects.filter(removed).delete()
        FragmentEdge.objects.bulk_create(
            FragmentEdge(source_id=e.source, target_id=e.target, relation=e.relation)
            for e in diff.edges_added
        )
        for relabel in diff.edges_relabelled:
            FragmentEdge.objects.filter(source_id=relabel.source, target_id=relabel.target).update(
                relation=relabel.new
            )
        FragmentSource.objects.bulk_create(
            (FragmentSource(fragment_id=s.key, event_id=s.event_id) for s in diff.sources_added),
            ignore_conflicts=True,
        )
        for key in diff.fragments_created:
            fragment_log(
                user_id=user.pk,
                fragment_key=key,
                action=ADDITION,
                message="Created from a draft" + _what_changed(diff, key),
            )
        for key in diff.fragments_changed():
            fragment_log(
                user_id=user.pk,
                fragment_key=key,
                action=CHANGE,
                message="Changed from a draft" + _what_changed(diff, key),
            )
    return diff


def _what_changed(diff: DraftDiff, key: str) -> str:
    parts = []
    tiers = [change.tier for change in diff.tiers_changed if change.key == key]
    if tiers:
        parts.append("tiers " + ", ".join(tiers))

    def mine(edges) -> list:
        return [edge for edge in edges if key in (edge.source, edge.target)]

    for label, edges in (("edges added", diff.edges_added), ("removed", diff.edges_removed)):
        if mine(edges):
            parts.append(f"{label} " + ", ".join(_edge_words(edge) for edge in mine(edges)))
    relabelled = mine(diff.edges_relabelled)
    if relabelled:
        parts.append(
            "relabelled "
            + ", ".join(f"{e.source} → {e.target} “{e.old}” → “{e.new}”" for e in relabelled)
        )
    sources = diff.sources_of(key)
    if sources:
        parts.append("sources added events " + ", ".join(map(str, sources)))
    return ": " + "; ".join(parts) if parts else ""


def _edge_words(edge: DraftEdge) -> str:
    return f"{edge.source} → {edge.target}" + (f" ({edge.relation})" if edge.relation else "")
