"""Writes to the Gem: the decay sweep, and the Anvil's reshaping of fragments by a person.

Every Anvil write here runs in one transaction and leaves an entry in the admin log saying what
changed; nothing a fragment held is lost by a rename or a fold.
"""

import re
from dataclasses import dataclass, field
from datetime import datetime

from django.conf import settings
from django.contrib.admin.models import CHANGE, DELETION, LogEntry
from django.contrib.contenttypes.models import ContentType
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Q

from gem import decay
from gem.models import (
    KEY_VALIDATOR,
    AmbientProse,
    Fragment,
    FragmentEdge,
    FragmentSource,
    WorkingMemory,
    WorkingMemoryRef,
    WorkingMemoryStatus,
)
from gem.selectors import ambient_prose_current, decay_inputs

TIERS = ("ambient", "recognition", "inventory")


def working_memory_sweep(*, now: datetime, current_turn: int) -> list[int]:
    """Mark ``decayed`` the active items that are under the threshold for good."""
    gone = [
        item.pk
        for item in WorkingMemory.objects.filter(status="active")
        if decay.is_gone_for_good(
            **decay_inputs(item, now=now, current_turn=current_turn),
            pressure=settings.DECAY_PRESSURE,
        )
    ]
    with transaction.atomic():
        WorkingMemory.objects.filter(pk__in=gone, status="active").update(
            status="decayed", resolved_at=now
        )
    return gone


class ReshapeError(ValueError):
    """A rename or fold that cannot be done, with the reason a person can act on."""


def _mention(key: str) -> re.Pattern[str]:
    return re.compile(rf"\[{re.escape(key)}\]")


def _ambient_prose_repoint(*, old: str, new: str, author_id: int | None) -> bool:
    """Save a new ambient prose version with ``[old]`` written ``[new]``; False if none."""
    current = ambient_prose_current()
    updated = _mention(old).sub(f"[{new}]", current)
    if updated == current:
        return False
    AmbientProse.objects.create(content=updated, author_id=author_id)
    return True


def fragment_log(*, user_id: int, fragment_key: str, action: int, message: str) -> None:
    """An admin log entry for a fragment by key: it may be gone by the time it is logged (fold)."""
    LogEntry.objects.create(
        user_id=user_id,
        content_type=ContentType.objects.get_for_model(Fragment),
        object_id=fragment_key,
        object_repr=fragment_key,
        action_flag=action,
        change_message=message,
    )


@dataclass
class RenamePlan:
    """What renaming a key will carry along, shown before it happens."""

    old: str
    new: str
    edges: int
    sources: int
    refs: int
    ambient_mentions: int


def _rename_refusal(old_key: str, new_key: str) -> str | None:
    """Why ``old_key`` cannot become ``new_key``, or None when it can."""
    try:
        KEY_VALIDATOR(new_key)
    except ValidationError as error:
        return f"“{new_key}” cannot be a key: {error.messages[0]}"
    if old_key == new_key:
        return f"“{old_key}” already has that key."
    if not Fragment.objects.filter(key=old_key).exists():
        return f"There is no fragment “{old_key}”."
    if Fragment.objects.filter(key=new_key).exists():
        return f"“{new_key}” is already a fragment: fold into it instead."
    return None


def fragment_rename_preview(*, old_key: str, new_key: str) -> RenamePlan:
    """Rename a key on paper: what follows it, nothing written."""
    if refusal := _rename_refusal(old_key, new_key):
        raise ReshapeError(refusal)
    return RenamePlan(
        old=old_key,
        new=new_key,
        edges=FragmentEdge.objects.filter(Q(source=old_key) | Q(target=old_key)).count(),
        sources=FragmentSource.objects.filter(fragment=old_key).count(),
        refs=WorkingMemoryRef.objects.filter(fragment=old_key).count(),
        ambient_mentions=len(_mention(old_key).findall(ambient_prose_current())),
    )


def fragment_rename(*, old_key: str, new_key: str, user_id: int) -> Fragment:
    """Give a fragment a new key; edges, sources, working-memory links and ``[key]`` mentions
    in the ambient prose follow, in one transaction."""
    with transaction.atomic():
        old = Fragment.objects.select_for_update().filter(key=old_key).first()
        if refusal := _rename_refusal(old_key, new_key):
            raise ReshapeError(refusal)
        renamed = Fragment.objects.create(
            key=new_key, created_at=old.created_at, **{tier: getattr(old, tier) for tier in TIERS}
        )
        FragmentEdge.objects.filter(source=old).update(source=renamed)
        FragmentEdge.objects.filter(target=old).update(target=renamed)
        FragmentSource.objects.filter(fragment=old).update(fragment=renamed)
        WorkingMemoryRef.objects.filter(fragment=old).update(fragment=renamed)
        prose = _ambient_prose_repoint(old=old_key, new=new_key, author_id=user_id)
        old.delete()
        fragment_log(
            user_id=user_id,
            fragment_key=new_key,
            action=CHANGE,
            message=f"Renamed “{old_key}” to “{new_key}”"
            + ("; ambient prose mentions follow" if prose else ""),
        )
    return renamed


@dataclass
class FoldPlan:
    """What folding one fragment into another will do, shown before it happens."""

    source: str
    into: str
    tiers: dict[str, str] = field(default_factory=dict)  # the kept fragment's tiers after
    edges_moved: list[tuple[str, str]] = field(default_factory=list)
    edges_dropped: list[tuple[str, str]] = field(default_factory=list)  # already there, or a loop
    sources_moved: int = 0
    refs_moved: int = 0
    ambient_mentions: int = 0


def fragment_fold_preview(*, source_key: str, into_key: str) -> FoldPlan:
    """Fold ``source_key`` into ``into_key``, on paper: nothing is written."""
    if source_key == into_key:
        raise ReshapeError("A fragment cannot be folded into itself.")
    fragments = Fragment.objects.in_bulk([source_key, into_key])
    for key in (source_key, into_key):
        if key not in fragments:
            raise ReshapeError(f"There is no fragment “{key}”.")
    source, into = fragments[source_key], fragments[into_key]
    plan = FoldPlan(source=source_key, into=into_key)
    for tier in TIERS:
        kept, folded = getattr(into, tier).strip(), getattr(source, tier).strip()
        parts = [kept] if kept else []
        if folded:
            parts.append(f"## {source_key}\n{folded}")
        plan.tiers[tier] = "\n\n".join(parts)
    existing = set(FragmentEdge.objects.values_list("source_id", "target_id"))
    for edge in FragmentEdge.objects.filter(source=source):
        moved = (into_key, edge.target_id)
        if edge.target_id == into_key or moved in existing:
            plan.edges_dropped.append((source_key, edge.target_id))
        else:
            plan.edges_moved.append(moved)
            existing.add(moved)
    for edge in FragmentEdge.objects.filter(target=source):
        moved = (edge.source_id, into_key)
        if edge.source_id == into_key or moved in existing:
            plan.edges_dropped.append((edge.source_id, source_key))
        else:
            plan.edges_moved.append(moved)
            existing.add(moved)
    plan.sources_moved = FragmentSource.objects.filter(fragment=source).count()
    plan.refs_moved = WorkingMemoryRef.objects.filter(fragment=source).count()
    plan.ambient_mentions = len(_mention(source_key).findall(ambient_prose_current()))
    return plan


def fragment_fold(*, source_key: str, into_key: str, user_id: int) -> FoldPlan:
    """Fold one fragment into another: its tiers appended under a heading, its edges re-pointed
    without duplicates, its sources and working-memory links moved, its ambient mentions
    re-pointed; then it is removed. One transaction."""
    with transaction.atomic():
        plan = fragment_fold_preview(source_key=source_key, into_key=into_key)
        into = Fragment.objects.select_for_update().get(key=into_key)
        for tier, text in plan.tiers.items():
            setattr(into, tier, text)
        into.save(update_fields=[*TIERS, "updated_at"])
        source = Fragment.objects.get(key=source_key)
        for edge in FragmentEdge.objects.filter(source=source):
            if (into_key, edge.target_id) in plan.edges_moved:
                FragmentEdge.objects.filter(pk=edge.pk).update(source=into)
        for edge in FragmentEdge.objects.filter(target=source):
            if (edge.source_id, into_key) in plan.edges_moved:
                FragmentEdge.objects.filter(pk=edge.pk).update(target=into)
        kept_events = set(into.sources.values_list("event_id", flat=True))
        FragmentSource.objects.filter(fragment=source).exclude(event_id__in=kept_events).update(
            fragment=into
        )
        linked = set(into.wm_refs.values_list("wm_id", flat=True))
        WorkingMemoryRef.objects.filter(fragment=source).exclude(wm_id__in=linked).update(
            fragment=into
        )
        _ambient_prose_repoint(old=source_key, new=into_key, author_id=user_id)
        source.delete()  # what was not moved was already held by ``into``
        fragment_log(
            user_id=user_id,
            fragment_key=into_key,
            action=CHANGE,
            message=(
                f"Folded “{source_key}” into “{into_key}”: tiers appended, "
                f"{len(plan.edges_moved)} edge(s) moved, {len(plan.edges_dropped)} dropped as "
                f"duplicates, {plan.sources_moved} source(s) and {plan.refs_moved} link(s) moved"
            ),
        )
        fragment_log(
            user_id=user_id,
            fragment_key=source_key,
            action=DELETION,
            message=f"Folded into “{into_key}”",
        )
    return plan


class WorkingMemoryError(ValueError):
    """A change to working memory that cannot be made, and why."""


def working_memory_status_set(
    *, item_ids: list[int], status: str, reason: str, user_id: int, now: datetime
) -> list[int]:
    """Move items to ``status`` for a stated reason, which the admin log keeps with each item.

    Leaving ``active`` stamps ``resolved_at``; coming back clears it. Items already in that
    status are left alone. Returns the ids that changed.
    """
    if status not in WorkingMemoryStatus.values:
        raise WorkingMemoryError(f"“{status}” is not a working-memory status.")
    reason = reason.strip()
    if not reason:
        raise WorkingMemoryError("Say why the status changes: the reason is kept in the log.")
    with transaction.atomic():
        items = list(
            WorkingMemory.objects.select_for_update()
            .filter(pk__in=item_ids)
            .exclude(status=status)
            .order_by("pk")
        )
        resolved_at = None if status == WorkingMemoryStatus.ACTIVE else now
        WorkingMemory.objects.filter(pk__in=[item.pk for item in items]).update(
            status=status, resolved_at=resolved_at
        )
        for previous in sorted({item.status for item in items}):
            LogEntry.objects.log_actions(
                user_id,
                [item for item in items if item.status == previous],
                CHANGE,
                f"Status {previous} → {status}: {reason}",
            )
    return [item.pk for item in items]
