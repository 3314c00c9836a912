"""Applying a draft to the Gem, and the one write of fragments, edges and sources.

``draft_apply`` is how every caller applies a draft (the Anvil's draft page, a Loom call's
draft, an import's proposal): parse, compare and write happen in one transaction on the default
store, which a caller's own record of it joins (``loom.services.loom_draft_apply``,
``anvil.proposals.proposal_apply``). A draft that cannot be read, or that names a fragment
nobody has or a source that is not an event, raises ``DraftError`` and changes nothing. Each
fragment created or changed gets an entry in the admin log saying what changed, its new sources
included.

``diff_write`` writes a ``DraftDiff``: a draft's, or what the Anvil's fragment form and its
inlines changed, so fragments, edges and sources are written in one place.
``fragments_delete`` deletes fragments (their edges, sources and references go with them).
"""

from collections.abc import Container, Iterable

from django.contrib.admin.models import ADDITION, CHANGE
from django.db import transaction
from django.db.models import Q

from gem.draft import (
    DraftConflict,
    DraftDiff,
    DraftEdge,
    DraftError,
    EventsFound,
    TriggersChange,
    draft_check,
    draft_diff,
    draft_parse,
    draft_parts,
)
from gem.keys import key_folded, twin_refusal
from gem.models import Fragment, FragmentEdge, FragmentSource
from gem.services import fragment_log
from gem.state import chars_per_token
from gem.tier_size import tier_refusal


def draft_apply(
    text: str,
    *,
    user,
    events_found: EventsFound,
    base: str = "",
    parts: Container[str] | None = None,
) -> DraftDiff:
    """Apply a draft written by a person; returns what changed (empty when nothing did; its
    ``unchecked`` names the fragments the draft did not say it was written against).
    ``events_found`` is the event log's lookup (``events.selectors.source_events``); ``base``
    the text it was written against, when it is kept beside it (``draft_check``).

    A draft that would overwrite what changed since it was written raises ``DraftConflict``
    (its ``check`` is the three-way difference) and changes nothing; ``parts`` (``KEY:PART``
    names) applies only those parts, none of which may conflict."""
    draft = draft_parse(text)
    with transaction.atomic():
        check = draft_check(draft, base=base)
        if parts is None:
            if check.conflicts:
                raise DraftConflict(check)
        else:
            if not parts:
                raise DraftError("Choose at least one part of the draft to apply.")
            refused = [part.name for part in check.conflicts if part.name in parts]
            if refused:
                raise DraftError(
                    f"{', '.join(refused)} changed since the draft was written and the draft "
                    "changes it too: edit the draft against today's text"
                )
            draft = draft_parts(draft, parts)
        diff = draft_diff(draft, events_found=events_found)
        diff.unchecked = check.unchecked
        if diff.is_empty:
            return diff
        diff_write(diff)
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


def diff_write(diff: DraftDiff) -> None:
    """Write what ``diff`` says, in one transaction: fragments created with their tiers and
    triggers, tiers and triggers changed, edges removed, added and relabelled, sources recorded
    and removed. The diff has been checked against the Gem (``draft_diff``, or the fragment
    form's validation). A diff the Gem refuses (``diff_refusal``) raises ``DraftError`` and
    writes nothing."""
    if refusal := diff_refusal(diff):
        raise DraftError(refusal)
    new_tiers: dict[str, dict[str, str | list[str]]] = {}
    for change in diff.tiers_changed:
        new = list(change.triggers) if isinstance(change, TriggersChange) else change.new
        new_tiers.setdefault(change.key, {})[change.tier] = new
    created = set(diff.fragments_created)
    with transaction.atomic():
        Fragment.objects.bulk_create(
            Fragment(key=key, key_folded=key_folded(key), **new_tiers.get(key, {}))
            for key in diff.fragments_created
        )
        changed = {key: tiers for key, tiers in new_tiers.items() if key not in created}
        for fragment in Fragment.objects.select_for_update().filter(key__in=changed):
            for tier, text_new in changed[fragment.key].items():
                setattr(fragment, tier, text_new)
            fragment.save(update_fields=[*changed[fragment.key], "updated_at"])
        if diff.edges_removed:
            FragmentEdge.objects.filter(
                _pairs((e.source, e.target) for e in diff.edges_removed)
            ).delete()
        FragmentEdge.objects.bulk_create(
            FragmentEdge(source_id=e.source, target_id=e.target, relation=e.relation)
            for e in diff.edges_added
        )
        for relabel in diff.edges_relabelled:
            FragmentEdge.objects.filter(source_id=relabel.source, target_id=relabel.target).update(
                relation=relabel.new
            )
        if diff.sources_removed:
            FragmentSource.objects.filter(
                _pairs(
                    [(s.key, s.event_id) for s in diff.sources_removed], "fragment_id", "event_id"
                )
            ).delete()
        FragmentSource.objects.bulk_create(
            (FragmentSource(fragment_id=s.key, event_id=s.event_id) for s in diff.sources_added),
            ignore_conflicts=True,
        )


def diff_refusal(diff: DraftDiff) -> str | None:
    """Why the Gem would not write ``diff``, in words, or None: a fragment it creates whose key
    is another's but for case (``gem.keys``), or a tier past the most a tier may hold
    (``gem.tier_size``)."""
    if twin := twin_refusal(diff.fragments_created, fragment_model=Fragment):
        return twin
    cpt = chars_per_token()
    for change in diff.tiers_changed:
        if isinstance(change, TriggersChange):
            continue
        if refusal := tier_refusal(change.key, change.tier, change.new, chars_per_token=cpt):
            return refusal
    return None


def fragments_delete(*, keys: Iterable[str]) -> None:
    """Delete fragments: their edges, sources and working-memory references go with them."""
    Fragment.objects.filter(key__in=list(keys)).delete()


def _pairs(pairs: Iterable[tuple], first: str = "source_id", second: str = "target_id") -> Q:
    condition = Q()
    for one, other in pairs:
        condition |= Q(**{first: one, second: other})
    return condition


def _what_changed(diff: DraftDiff, key: str) -> str:
    parts = []
    changes = [change for change in diff.tiers_changed if change.key == key]
    tiers = [change.tier for change in changes if not isinstance(change, TriggersChange)]
    if tiers:
        parts.append("tiers " + ", ".join(tiers))
    if len(tiers) < len(changes):
        parts.append("triggers")

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
