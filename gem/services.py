"""Writes to the Gem: working memory's one create and one status change, the decay sweep, and
the Anvil's reshaping of fragments by a person.

Working memory is written here and nowhere else (SPEC "Tag language"): the Heart's ingest, the
promotion of a Mirror suggestion, the imports and the Anvil's add form all call
``working_memory_create``, the Anvil's edits ``working_memory_update``, its review of near
duplicates ``working_memory_twin_review``, and every status change goes through
``working_memory_status_set``.

Every Anvil write here runs in one transaction and leaves an entry in the admin log saying what
changed; nothing a fragment held is lost by a rename or a fold. The bulk imports (an export,
a legacy installation) write fragments, edges and sources as they were recorded, ids and times
kept, through ``fragments_import``, ``edges_import`` and ``sources_import``: in batches, with
no admin-log entry per row.
"""

import logging
import re
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from itertools import batched

from django.contrib.admin.models import ADDITION, CHANGE, DELETION, LogEntry
from django.contrib.contenttypes.models import ContentType
from django.core.exceptions import ValidationError
from django.db import models, router, transaction
from django.db.models import Q
from django.utils import timezone

from gem import decay
from gem.due import due_from_text
from gem.importance import importance_of, importance_refreshed, valence_of
from gem.keys import key_folded, key_move, mention, mentions_repointed, twin_refusal
from gem.match import best_match
from gem.meaning import near_duplicate, semantic_hash
from gem.models import (
    COLOR_VALIDATOR,
    KEY_VALIDATOR,
    RELATION_MAX_LENGTH,
    TIERS,
    AmbientProse,
    Forgotten,
    Fragment,
    FragmentEdge,
    FragmentSource,
    Identity,
    IdentitySide,
    VersionedText,
    WorkingMemory,
    WorkingMemoryRef,
    WorkingMemorySource,
    WorkingMemoryStatus,
    WorkingMemoryType,
)
from gem.selectors import ambient_prose_current, decay_inputs
from gem.state import chars_per_token, state_set
from gem.tier_size import tier_refusal
from gem.waking import TRIGGERS_MAX, triggers_joined
from gem.zone import TIME_ZONE, owner_time_zone, time_zone_known
from silentstar.when import when
from silentstar.words import counted

logger = logging.getLogger(__name__)


def working_memory_sweep(*, now: datetime, current_turn: int) -> list[int]:
    """Mark ``decayed`` the active items that are under the threshold for good."""
    gone = [
        item.pk
        for item in WorkingMemory.objects.filter(status="active")
        # Gone for good is decided without pressure, which can fall again.
        if decay.is_gone_for_good(**decay_inputs(item, now=now, current_turn=current_turn))
    ]
    return working_memory_status_set(
        item_ids=gone,
        status=WorkingMemoryStatus.DECAYED,
        reason="under the decay threshold for good",
        now=now,
        from_status=WorkingMemoryStatus.ACTIVE,
    )


class ReshapeError(ValueError):
    """A rename or fold that cannot be done, with the reason a person can act on."""


def _ambient_prose_repoint(*, old: str, new: str, author_id: int | None) -> bool:
    """Save a new ambient prose version with ``[old]`` written ``[new]``; False if none."""
    current = ambient_prose_current()
    updated = mentions_repointed(current, old=old, new=new)
    if updated == current:
        return False
    ambient_prose_set(content=updated, author=author_id)
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
    if twin := twin_refusal([new_key], fragment_model=Fragment, leaving=[old_key]):
        return f"{twin} Fold into it instead."
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
        ambient_mentions=len(mention(old_key).findall(ambient_prose_current())),
    )


def fragment_rename(*, old_key: str, new_key: str, user_id: int) -> Fragment:
    """Give a fragment a new key (which may differ from the old one only in case); its tiers,
    triggers, edges, sources, working-memory links, Loom sessions and ``[key]`` mentions in
    the ambient prose follow (``gem.keys.key_move``), in one transaction."""
    with transaction.atomic():
        Fragment.objects.select_for_update().filter(key=old_key).first()
        if refusal := _rename_refusal(old_key, new_key):
            raise ReshapeError(refusal)
        renamed = key_move(fragment_model=Fragment, old=old_key, new=new_key)
        prose = _ambient_prose_repoint(old=old_key, new=new_key, author_id=user_id)
        fragment_log(
            user_id=user_id,
            fragment_key=new_key,
            action=CHANGE,
            message=f"Renamed “{old_key}” to “{new_key}”"
            + ("; ambient prose mentions follow" if prose else ""),
        )
    return renamed


LABEL_SEPARATOR = "; "


def relations_joined(kept: str, merged: str) -> str:
    """The kept edge's label with the merged edge's labels it lacks appended: ``near`` and
    ``moon-rel`` make ``near; moon-rel``. Labels are read between ``;``; empty ones and ones
    already there add nothing, and the kept label is left as it was written."""
    held = {label.strip() for label in kept.split(";")}
    joined = kept
    for label in dict.fromkeys(label.strip() for label in merged.split(";")):
        if label and label not in held:
            joined = f"{joined}{LABEL_SEPARATOR}{label}" if joined.strip() else label
    return joined


@dataclass(frozen=True)
class EdgeMerge:
    """An edge of the folded fragment that cannot be moved as it is, and where its label goes.

    ``kept`` is the kept fragment's edge it duplicates, and ``relation_after`` that edge's label
    after the fold (the two labels joined, ``relations_joined``). ``kept`` is None for an edge
    between the two fragments, which would point from the kept fragment to itself: its label,
    like one too long to join (over ``RELATION_MAX_LENGTH``), is written in the kept fragment's
    recognition tier under the folded fragment's heading (``in_tier``).
    """

    source: str
    target: str
    relation: str
    kept: tuple[str, str] | None
    relation_after: str = ""
    in_tier: bool = False

    def tier_line(self) -> str:
        return f"- {self.source} → {self.target}: {self.relation}"

    def as_text(self) -> str:
        edge = f"{self.source} → {self.target}" + (f" “{self.relation}”" if self.relation else "")
        if self.kept is None:
            edge += " would point at itself"
        else:
            edge += f" merged into {self.kept[0]} → {self.kept[1]}"
        if self.in_tier:
            return f"{edge}: its label is kept in the recognition tier"
        if self.kept is None:
            return f"{edge}: it had no label"
        return f"{edge}, labelled “{self.relation_after}”"


@dataclass
class FoldPlan:
    """What folding one fragment into another will do, shown before it happens."""

    source: str
    into: str
    tiers: dict[str, str] = field(default_factory=dict)  # the kept fragment's tiers after
    triggers: list[str] = field(default_factory=list)  # the kept fragment's triggers after
    edges_moved: list[tuple[str, str]] = field(default_factory=list)
    edges_merged: list[EdgeMerge] = field(default_factory=list)  # already there, or a loop
    sources_moved: int = 0
    refs_moved: int = 0
    ambient_mentions: int = 0


def _edge_merge(edge: FragmentEdge, kept: tuple[str, str] | None, existing: dict) -> EdgeMerge:
    """How an edge of the folded fragment joins the kept fragment's ``kept`` edge (None: a loop),
    whose label so far ``existing`` holds."""
    source, target, relation = edge.source_id, edge.target_id, edge.relation
    if kept is None:
        return EdgeMerge(source, target, relation, None, in_tier=bool(relation.strip()))
    joined = relations_joined(existing[kept], relation)
    if len(joined) > RELATION_MAX_LENGTH:
        return EdgeMerge(source, target, relation, kept, existing[kept], in_tier=True)
    existing[kept] = joined
    return EdgeMerge(source, target, relation, kept, joined)


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
    existing = {
        (edge_source, edge_target): relation
        for edge_source, edge_target, relation in FragmentEdge.objects.filter(
            Q(source=into) | Q(target=into)
        ).values_list("source_id", "target_id", "relation")
    }
    for edge in FragmentEdge.objects.filter(Q(source=source) | Q(target=source)).order_by(
        "source", "target"
    ):
        outgoing = edge.source_id == source_key
        other = edge.target_id if outgoing else edge.source_id
        moved = (into_key, other) if outgoing else (other, into_key)
        if other == into_key:
            plan.edges_merged.append(_edge_merge(edge, None, existing))
        elif moved in existing:
            plan.edges_merged.append(_edge_merge(edge, moved, existing))
        else:
            plan.edges_moved.append(moved)
            existing[moved] = edge.relation
    kept_in_tier = [merge.tier_line() for merge in plan.edges_merged if merge.in_tier]
    cpt = chars_per_token()
    for tier in TIERS:
        kept, folded = getattr(into, tier).strip(), getattr(source, tier).strip()
        if tier == "recognition" and kept_in_tier:
            folded = "\n\n".join(filter(None, [folded, "\n".join(kept_in_tier)]))
        parts = [kept] if kept else []
        if folded:
            parts.append(f"## {source_key}\n{folded}")
        plan.tiers[tier] = "\n\n".join(parts)
        if refusal := tier_refusal(into_key, tier, plan.tiers[tier], chars_per_token=cpt):
            raise ReshapeError(refusal)
    plan.triggers, past = triggers_joined(into_key, into.triggers, source.triggers)
    if past:
        raise ReshapeError(
            f"Their triggers together are more than the {TRIGGERS_MAX} a fragment has: remove "
            f"some of “{source_key}”'s first (“{past[0]}” and after)."
        )
    plan.sources_moved = FragmentSource.objects.filter(fragment=source).count()
    plan.refs_moved = WorkingMemoryRef.objects.filter(fragment=source).count()
    plan.ambient_mentions = len(mention(source_key).findall(ambient_prose_current()))
    return plan


def fragment_fold(*, source_key: str, into_key: str, user_id: int) -> FoldPlan:
    """Fold one fragment into another: its tiers appended under a heading, its edges re-pointed
    without duplicates (the label of an edge the kept fragment already has joined onto that
    edge's; the label of an edge between the two written in the recognition tier), its sources
    and working-memory links moved, its ambient mentions re-pointed; then it is removed. One
    transaction."""
    with transaction.atomic():
        plan = fragment_fold_preview(source_key=source_key, into_key=into_key)
        into = Fragment.objects.select_for_update().get(key=into_key)
        for tier, text in plan.tiers.items():
            setattr(into, tier, text)
        into.triggers = plan.triggers
        into.save(update_fields=[*TIERS, "triggers", "updated_at"])
        source = Fragment.objects.get(key=source_key)
        for edge in FragmentEdge.objects.filter(source=source):
            if (into_key, edge.target_id) in plan.edges_moved:
                FragmentEdge.objects.filter(pk=edge.pk).update(source=into)
        for edge in FragmentEdge.objects.filter(target=source):
            if (edge.source_id, into_key) in plan.edges_moved:
                FragmentEdge.objects.filter(pk=edge.pk).update(target=into)
        for merge in plan.edges_merged:
            if merge.kept is not None and not merge.in_tier:
                FragmentEdge.objects.filter(source=merge.kept[0], target=merge.kept[1]).update(
                    relation=merge.relation_after
                )
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
        merged = "; ".join(merge.as_text() for merge in plan.edges_merged)
        fragment_log(
            user_id=user_id,
            fragment_key=into_key,
            action=CHANGE,
            message=(
                f"Folded “{source_key}” into “{into_key}”: tiers appended, "
                f"{counted(len(plan.edges_moved), 'edge')} moved, "
                f"{len(plan.edges_merged)} merged, {counted(plan.sources_moved, 'source')} and "
                f"{counted(plan.refs_moved, 'link')} moved"
                + (f". Merged: {merged}" if merged else "")
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


HIDDEN_REFUSED = (
    "Only a plan with a due date can be hidden: it stays out of Lingering until 48 hours before "
    "it is due."
)


def hidden_allowed(type: str, due: datetime | None) -> bool:
    """Whether an item of ``type``, due at ``due``, can be a hidden plan."""
    return type == WorkingMemoryType.PLAN and due is not None


FEELING_WORD_CAP = 15


@dataclass
class WorkingMemoryWrite:
    """What ``working_memory_create`` did: the item written or refreshed, and what it replaced.

    ``existed``: a recorded item (``WorkingMemoryRecorded``) whose id was already taken; nothing
    was written and ``item`` is the one there.
    """

    item: WorkingMemory
    refreshed: bool = False
    superseded: list[int] = field(default_factory=list)
    existed: bool = False


@dataclass(frozen=True)
class WorkingMemoryRecorded:
    """An item as it was recorded elsewhere (an import, the archive), to be written exactly.

    The tag language's rules were applied when it was first written, so none is applied again:
    no supersession, no refresh, no due date read, no near-duplicate flag of its own. Importance
    and valence left None are scored as for a new item; ``fragment_keys`` None links it by its
    words, as a new item, and otherwise names the fragments it was linked to (those that still
    exist; so does ``near_duplicate_of``).

    ``deduplicated`` applies the duplicate rules to an active item from a memory that has them
    too (Mira's): one that means what an active item of its type and subject means refreshes
    that item instead of being written (at its recorded time, never earlier than the item's
    own; the item keeps its turn), and one that nearly repeats an active item is written
    flagged as its near duplicate.
    """

    created_at: datetime
    refreshed_at: datetime
    id: int | None = None
    status: str = WorkingMemoryStatus.ACTIVE
    resolved_at: datetime | None = None
    importance: float | None = None
    valence: float | None = None
    importance_edited: bool = False
    near_duplicate_of: int | None = None
    fragment_keys: tuple[str, ...] | None = None
    source_event_ids: tuple[int, ...] = ()
    deduplicated: bool = False


def working_memory_create(
    *,
    type: str,
    content: str,
    subject: str = "",
    actor: str,
    at: datetime,
    turn: int | None,
    event_id: int | None = None,
    due: datetime | None = None,
    words_at: datetime | None = None,
    suggestion_id: int | None = None,
    importance: float | None = None,
    valence: float | None = None,
    hidden: bool = False,
    recorded: WorkingMemoryRecorded | None = None,
) -> WorkingMemoryWrite:
    """Write one working-memory item by every rule of the tag language, whoever writes it.

    - A feeling keeps its first ``FEELING_WORD_CAP`` words and is the one active feeling: it
      supersedes every other. A desc supersedes the active descs of the same subject.
    - An active item of the same type and subject that means the same (the same semantic hash:
      other spacing, case, punctuation, order or word endings) is refreshed instead of written
      twice: its decay anchor and turn move to now and its importance rises a little.
    - A new item that nearly repeats an active one of its type (``gem.meaning.near_duplicate``)
      is written, and flagged with a link to its twin for a person to review.
    - A plan without ``due`` is due when its words say, read at ``words_at`` (when they were
      said; default ``at``) in the owner's time zone.
    - Importance and valence are scored (``gem.importance``) unless given.
    - The item is linked to every fragment whose key it names.
    - ``hidden`` makes a plan with a due date a hidden plan: out of Lingering until its
      resurfacing window (`gem.decay.hidden_plan_surfaces`). Anything else cannot be hidden.

    ``at`` is when it is written (created and refreshed), ``turn`` the turn counter then.
    ``recorded`` writes an item recorded elsewhere exactly as it was (``WorkingMemoryRecorded``).
    """
    content = _content_checked(type, content, feeling_cap=recorded is None)
    _numbers_checked(importance=importance, valence=valence)
    subject = subject.strip()
    # A number given here is a person's (the Anvil's add form): it wins on every refresh.
    person_scored = importance is not None or valence is not None
    if recorded is not None:
        return _working_memory_recorded(
            recorded,
            type=type,
            content=content,
            subject=subject,
            actor=actor,
            turn=turn,
            event_id=event_id,
            due=due,
            suggestion_id=suggestion_id,
            hidden=hidden,
        )
    meaning = semantic_hash(content)
    with transaction.atomic():
        same = working_memory_same(type=type, content=content, subject=subject, lock=True)
        if same is not None:
            _same_refresh(same, at=at, turn=turn, importance=importance, valence=valence)
            return WorkingMemoryWrite(item=same, refreshed=True)
        superseded = _replaced_supersede(
            type=type, subject=subject, at=at, reason=f"a new {type} replaces it"
        )
        if type == WorkingMemoryType.PLAN and due is None:
            due = due_from_text(content, written_at=words_at or at, time_zone=owner_time_zone())
        if hidden and not hidden_allowed(type, due):
            raise WorkingMemoryError(HIDDEN_REFUSED)
        keys = _fragment_keys_named(subject, content)
        if valence is None:
            valence = valence_of(content)
        if importance is None:
            importance = importance_of(
                type=type, due=due, linked_fragments=len(keys), valence=valence
            )
        item = WorkingMemory.objects.create(
            event_id=event_id,
            type=type,
            content=content,
            subject=subject,
            actor=actor,
            due=due,
            turn=turn,
            created_at=at,
            refreshed_at=at,
            suggestion_id=suggestion_id,
            hidden=hidden,
            importance=importance,
            valence=valence,
            importance_edited=person_scored,
            semantic_hash=meaning,
            near_duplicate_of=working_memory_near_twin(
                type=type, content=content, excluding=superseded
            ),
        )
        _fragments_link(item, keys)
    return WorkingMemoryWrite(item=item, superseded=superseded)


def _same_refresh(
    same: WorkingMemory,
    *,
    at: datetime,
    turn: int | None,
    importance: float | None = None,
    valence: float | None = None,
) -> None:
    """Refresh the active item a new one means the same as (``working_memory_create``): its
    decay anchor and turn move to ``at`` and ``turn``, and its importance rises a little unless
    a person scored it; numbers given are a person's and win."""
    if importance is not None or valence is not None:
        same.importance = same.importance if importance is None else importance
        same.valence = same.valence if valence is None else valence
        same.importance_edited = True
    elif not same.importance_edited:
        same.importance = importance_refreshed(same.importance)
    same.refreshed_at, same.turn = at, turn
    same.save(update_fields=["refreshed_at", "turn", "importance", "valence", "importance_edited"])


def working_memory_same(
    *, type: str, content: str, subject: str = "", excluding: int | None = None, lock: bool = False
) -> WorkingMemory | None:
    """The active item of ``type`` and ``subject`` that means what ``content`` means (the same
    semantic hash), if any: an exact duplicate, which a new write refreshes instead."""
    items = WorkingMemory.objects.filter(
        status="active", type=type, semantic_hash=semantic_hash(content), subject__iexact=subject
    ).exclude(pk=excluding)
    return (items.select_for_update() if lock else items).first()


def working_memory_near_twin(
    *, type: str, content: str, excluding: list[int] = ()
) -> WorkingMemory | None:
    """The newest active item of ``type`` that ``content`` nearly repeats, if any."""
    candidates = (
        WorkingMemory.objects.filter(status="active", type=type)
        .exclude(pk__in=list(excluding))
        .only("pk", "content")
    )
    return next((item for item in candidates if near_duplicate(content, item.content)), None)


def _working_memory_recorded(
    recorded: WorkingMemoryRecorded, *, type: str, content: str, subject: str, **fields
) -> WorkingMemoryWrite:
    """Write an item recorded elsewhere exactly as it was (``working_memory_create``)."""
    if recorded.status not in WorkingMemoryStatus.values:
        raise WorkingMemoryError(f"“{recorded.status}” is not a working-memory status.")
    with transaction.atomic():
        if recorded.id is not None:
            there = WorkingMemory.objects.filter(pk=recorded.id).first()
            if there is not None:
                return WorkingMemoryWrite(item=there, existed=True)
        twin = recorded.near_duplicate_of
        if recorded.deduplicated and recorded.status == WorkingMemoryStatus.ACTIVE:
            same = working_memory_same(type=type, content=content, subject=subject, lock=True)
            if same is not None:
                at = max(recorded.refreshed_at, same.refreshed_at)
                turn = same.turn if fields["turn"] is None else fields["turn"]
                _same_refresh(same, at=at, turn=turn)
                return WorkingMemoryWrite(item=same, refreshed=True)
            if twin is None:
                near = working_memory_near_twin(type=type, content=content)
                twin = None if near is None else near.pk
        if recorded.fragment_keys is None:
            keys = _fragment_keys_named(subject, content)
        else:  # a fragment removed since then takes its link with it
            named = Fragment.objects.filter(key__in=recorded.fragment_keys)
            keys = list(named.values_list("key", flat=True))
        if twin is not None and not WorkingMemory.objects.filter(pk=twin).exists():
            twin = None
        valence = recorded.valence if recorded.valence is not None else valence_of(content)
        importance = recorded.importance
        if importance is None:
            importance = importance_of(
                type=type, due=fields["due"], linked_fragments=len(keys), valence=valence
            )
        item = WorkingMemory.objects.create(
            id=recorded.id,
            type=type,
            content=content,
            semantic_hash=semantic_hash(content),
            subject=subject,
            status=recorded.status,
            created_at=recorded.created_at,
            refreshed_at=recorded.refreshed_at,
            resolved_at=recorded.resolved_at,
            importance=importance,
            valence=valence,
            importance_edited=recorded.importance_edited,
            near_duplicate_of_id=twin,
            **fields,
        )
        _fragments_link(item, keys)
        WorkingMemorySource.objects.bulk_create(
            [WorkingMemorySource(wm=item, event_id=pk) for pk in recorded.source_event_ids],
            ignore_conflicts=True,
        )
    return WorkingMemoryWrite(item=item)


class _Keep:
    """A value not given: the item keeps its own."""

    def __repr__(self):
        return "KEEP"


KEEP = _Keep()


def working_memory_update(
    *,
    item_id: int,
    at: datetime,
    user_id: int | None = None,
    type: str | None = None,
    content: str | None = None,
    subject: str | None = None,
    due: "datetime | _Keep | None" = KEEP,
    importance: float | None = None,
    valence: float | None = None,
    hidden: bool | None = None,
    actor: str | None = None,
) -> WorkingMemoryWrite:
    """Edit an item by the rules a new one follows: every change of working memory but its
    status (``working_memory_status_set``).

    - Its semantic hash follows its words, and a twin is looked for again when the words or the
      type change: an active item that means the same or nearly repeats it is its
      ``near_duplicate_of``, for a person to review.
    - Becoming the feeling, or a desc of a subject, supersedes the active feeling or the active
      descs of that subject, as a new one would (only an active item replaces others).
    - A plan whose words change is due when its new words say, read at ``at``, unless ``due``
      is given and differs from the one it had; words that name no time keep the due date.
    - A feeling keeps its first ``FEELING_WORD_CAP`` words.
    - ``importance`` or ``valence`` given are a person's and win from now on
      (``importance_edited``); otherwise both stay as they were scored.
    - Fragments its new words name are linked.
    - ``hidden`` hides a plan with a due date, or shows it again; anything else cannot be
      hidden (an item edited into something else stops being hidden).
    - ``actor``: who it is from, when the message it came from is given to another identity.

    Only the fields that change are written. ``user_id`` writes the edit in the admin log with
    what the rules did; an edit by the application is logged by it.
    """
    _numbers_checked(importance=importance, valence=valence)
    with transaction.atomic():
        item = WorkingMemory.objects.select_for_update().filter(pk=item_id).first()
        if item is None:
            raise WorkingMemoryError(f"There is no working-memory item #{item_id}.")
        was = {name: getattr(item, name) for name in _EDITABLE}
        item.type = type if type is not None else item.type
        item.subject = subject.strip() if subject is not None else item.subject
        item.content = _content_checked(item.type, item.content if content is None else content)
        words_changed = item.content != was["content"]
        notes: list[str] = []
        if due is not KEEP and due != was["due"]:
            item.due = due
        elif item.type == WorkingMemoryType.PLAN and words_changed:
            said = due_from_text(item.content, written_at=at, time_zone=owner_time_zone())
            if said is not None and said != item.due:
                item.due = said
                notes.append(f"due date read from the new words: {when(said)}")
        item.hidden = item.hidden if hidden is None else hidden
        item.actor = item.actor if actor is None else actor
        if item.hidden and not hidden_allowed(item.type, item.due):
            if hidden:
                raise WorkingMemoryError(HIDDEN_REFUSED)
            item.hidden = False
            notes.append("no longer hidden: only a plan with a due date can be")
        superseded: list[int] = []
        if item.status == WorkingMemoryStatus.ACTIVE and (
            item.type != was["type"] or item.subject.lower() != was["subject"].lower()
        ):
            superseded = _replaced_supersede(
                type=item.type,
                subject=item.subject,
                at=at,
                reason=f"an edited {item.type} replaces it",
                excluding=item.pk,
            )
            if superseded:
                notes.append("it replaces " + ", ".join(f"#{pk}" for pk in superseded))
        item.semantic_hash = semantic_hash(item.content)
        if words_changed or item.type != was["type"] or item.subject != was["subject"]:
            twin = working_memory_same(
                type=item.type, content=item.content, subject=item.subject, excluding=item.pk
            ) or working_memory_near_twin(
                type=item.type, content=item.content, excluding=[item.pk, *superseded]
            )
            item.near_duplicate_of_id = None if twin is None else twin.pk
            if twin is not None:
                notes.append(f"near duplicate of #{twin.pk}")
        keys = _fragment_keys_named(item.subject, item.content)
        if importance is not None or valence is not None:
            item.importance = item.importance if importance is None else importance
            item.valence = item.valence if valence is None else valence
            item.importance_edited = True
        changed = [name for name in _EDITABLE if getattr(item, name) != was[name]]
        if changed:
            item.save(update_fields=changed)
        _fragments_link(item, keys)
        if user_id is not None and changed:
            edited = [name for name in changed if name in _EDITED_BY_PERSON]
            message = "Edited " + ", ".join(edited or changed)
            LogEntry.objects.log_actions(user_id, [item], CHANGE, "; ".join([message, *notes]))
    return WorkingMemoryWrite(item=item, superseded=superseded)


_EDITED_BY_PERSON = ("type", "content", "subject", "due", "hidden", "importance", "valence")
_EDITABLE = (
    *_EDITED_BY_PERSON,
    "actor",
    "semantic_hash",
    "near_duplicate_of_id",  # the id: the twin's row is never read for the comparison
    "importance_edited",
)


def _replaced_supersede(
    *, type: str, subject: str, at: datetime, reason: str, excluding: int | None = None
) -> list[int]:
    """Supersede what an item of ``type`` replaces, new or edited: every other active feeling,
    or the active descs of its subject."""
    replaced = WorkingMemory.objects.filter(status="active", type=type).exclude(pk=excluding)
    if type == WorkingMemoryType.DESC and subject:
        replaced = replaced.filter(subject__iexact=subject)
    elif type != WorkingMemoryType.FEELING:
        return []
    return working_memory_status_set(
        item_ids=list(replaced.values_list("pk", flat=True)),
        status=WorkingMemoryStatus.SUPERSEDED,
        reason=reason,
        now=at,
        from_status=WorkingMemoryStatus.ACTIVE,
    )


def _content_checked(type: str, content: str, *, feeling_cap: bool = True) -> str:
    """An item's words as written, once its type is known and it has some: stripped, and a
    feeling's first ``FEELING_WORD_CAP`` words (an item recorded elsewhere keeps all of them)."""
    if type not in WorkingMemoryType.values:
        raise WorkingMemoryError(f"“{type}” is not a working-memory type.")
    content = content.strip()
    if type == WorkingMemoryType.FEELING and feeling_cap:
        content = " ".join(content.split()[:FEELING_WORD_CAP])
    if not content:
        raise WorkingMemoryError("A working-memory item needs some content.")
    return content


def _numbers_checked(*, importance: float | None, valence: float | None) -> None:
    for name, value, low in (("importance", importance, 0.0), ("valence", valence, -1.0)):
        if value is not None and not low <= value <= 1.0:
            raise WorkingMemoryError(f"{name} {value} is outside {low:g} to 1.")


class TwinDecision:
    KEEP_BOTH, DROP_THIS, DROP_TWIN = "keep_both", "drop_this", "drop_twin"


def working_memory_twin_review(
    *, item_id: int, decision: str, reason: str, user_id: int, now: datetime
) -> str:
    """A person's decision on an item flagged as a near duplicate: keep both, or drop this one
    or its twin (a status change with the reason). Either way the flag is cleared, and the
    admin log says what was decided. Returns what was done, in words."""
    if decision not in (TwinDecision.KEEP_BOTH, TwinDecision.DROP_THIS, TwinDecision.DROP_TWIN):
        raise WorkingMemoryError(f"“{decision}” is no decision on a near duplicate.")
    with transaction.atomic():
        item = WorkingMemory.objects.select_for_update().filter(pk=item_id).first()
        if item is None:
            raise WorkingMemoryError(f"There is no working-memory item #{item_id}.")
        twin_id = item.near_duplicate_of_id
        if twin_id is None:
            raise WorkingMemoryError("This item is no longer flagged as a near duplicate.")
        if decision == TwinDecision.KEEP_BOTH:
            done = f"Kept beside its near duplicate #{twin_id}"
        else:
            dropped, other = (
                (item.pk, twin_id) if decision == TwinDecision.DROP_THIS else (twin_id, item.pk)
            )
            working_memory_status_set(
                item_ids=[dropped],
                status=WorkingMemoryStatus.DROPPED,
                reason=f"near duplicate of #{other}: {reason}",
                user_id=user_id,
                now=now,
            )
            done = f"Reviewed beside #{twin_id}: #{dropped} dropped"
        WorkingMemory.objects.filter(pk=item.pk).update(near_duplicate_of=None)
        LogEntry.objects.log_actions(user_id, [item], CHANGE, done)
    return done


KEY_CANDIDATE = re.compile(r"[\w][\w'-]*")


def _fragment_keys_named(subject: str, content: str) -> list[str]:
    """The keys of the fragments the words name (a word equal to the key)."""
    words = {w.lower() for w in KEY_CANDIDATE.findall(f"{subject} {content}")}
    return list(Fragment.objects.filter(key__in=words).values_list("key", flat=True))


def _fragments_link(item: WorkingMemory, keys: list[str]) -> None:
    WorkingMemoryRef.objects.bulk_create(
        [WorkingMemoryRef(wm=item, fragment_id=key) for key in keys], ignore_conflicts=True
    )


def working_memory_match_set(
    *, type: str, words: str, status: str, reason: str, now: datetime
) -> int | None:
    """Move the active item of ``type`` that ``words`` name (lifecycle matching) to ``status``.

    Returns its id, or None when no active item matches: then nothing changes.
    """
    candidates = WorkingMemory.objects.filter(status="active", type=type).values_list(
        "pk", "content"
    )
    match = best_match(words, list(candidates))
    if match is None:
        return None
    working_memory_status_set(
        item_ids=[match],
        status=status,
        reason=reason,
        now=now,
        from_status=WorkingMemoryStatus.ACTIVE,
    )
    return match


def working_memory_forget(
    *, item_ids: list[int], by: str, user_id: int | None, now: datetime
) -> list[int]:
    """Forget items: each dropped, "forgotten" the reason, and its words kept as forgotten
    (``words_forget``) so that nothing stages them again. Returns the ids that were active."""
    items = list(
        WorkingMemory.objects.filter(pk__in=item_ids)
        .order_by("pk")
        .values_list("pk", "type", "content")
    )
    with transaction.atomic():
        dropped = working_memory_status_set(
            item_ids=[pk for pk, _, _ in items],
            status=WorkingMemoryStatus.DROPPED,
            reason=f"forgotten by {by}",
            now=now,
            user_id=user_id,
        )
        words_forget(
            [(type_, content, f"working memory #{pk}") for pk, type_, content in items], by=by
        )
    return dropped


def words_forget(entries: list[tuple[str, str, str]], *, by: str) -> None:
    """Keep ``(type, words, source)`` as forgotten by ``by``: every forgetting's one write."""
    Forgotten.objects.bulk_create(
        Forgotten(type=type_, content=content, source=source, forgotten_by=by)
        for type_, content, source in entries
    )


def working_memory_blank(*, item_ids: list[int], text: str) -> int:
    """Put ``text`` in place of these items' words and subject, whatever their status: what a
    purge of the message they came from leaves of them (``heart.corrections.event_purge``).
    Returns how many were blanked."""
    if not item_ids:
        return 0
    with transaction.atomic():
        return WorkingMemory.objects.filter(pk__in=item_ids).update(
            content=text, subject="", semantic_hash=semantic_hash(text)
        )


def working_memory_status_set(
    *,
    item_ids: list[int],
    status: str,
    reason: str,
    now: datetime,
    user_id: int | None = None,
    from_status: str | None = None,
) -> list[int]:
    """Move items to ``status`` for a stated reason: every status change of working memory.

    Leaving ``active`` stamps ``resolved_at``; coming back clears it. Items already in that
    status are left alone, and with ``from_status`` only items in that status move. A person's
    change (``user_id``) is written in the admin log with its reason, item by item; the Heart's,
    the Mirror's and the sweep's are logged by the application. Returns the ids that changed.
    """
    if status not in WorkingMemoryStatus.values:
        raise WorkingMemoryError(f"“{status}” is not a working-memory status.")
    reason = reason.strip()
    if not reason:
        raise WorkingMemoryError("Say why the status changes: the reason is kept in the log.")
    if not item_ids:
        return []
    with transaction.atomic():
        items = WorkingMemory.objects.select_for_update().filter(pk__in=item_ids)
        if from_status is not None:
            items = items.filter(status=from_status)
        items = list(items.exclude(status=status).order_by("pk"))
        resolved_at = None if status == WorkingMemoryStatus.ACTIVE else now
        WorkingMemory.objects.filter(pk__in=[item.pk for item in items]).update(
            status=status, resolved_at=resolved_at
        )
        for previous in sorted({item.status for item in items}):
            moved = [item for item in items if item.status == previous]
            message = f"Status {previous} → {status}: {reason}"
            if user_id is None:
                logger.info("%s (items %s)", message, ", ".join(str(item.pk) for item in moved))
            else:
                LogEntry.objects.log_actions(user_id, moved, CHANGE, message)
    return [item.pk for item in items]


# --- Who talks, and where -------------------------------------------------------------------


@dataclass(frozen=True)
class IdentityRow:
    """One identity as the set-up gives it: ``id`` of the row it changes, None for a new one."""

    name: str
    side: str
    color: str
    id: int | None = None


def identities_set(*, identities: list[IdentityRow], user_id: int | None = None) -> list[Identity]:
    """Make the identities exactly these: rows with an ``id`` are renamed or recoloured, rows
    without one are added (in their order), the others are removed.

    Every name is one word (``KEY_VALIDATOR``) used once, every colour ``#rrggbb``, and both
    sides keep at least one identity. Raises ``ValidationError`` with every reason at once;
    nothing is written then. A person's change (``user_id``) is written in the admin log.
    """
    rows = [replace(row, name=row.name.strip(), color=row.color.strip()) for row in identities]
    identities_check(rows)
    with transaction.atomic():
        existing = {identity.pk: identity for identity in Identity.objects.select_for_update()}
        unknown = sorted(row.id for row in rows if row.id is not None and row.id not in existing)
        if unknown:
            raise ValidationError(f"No identity has the id {unknown[0]}; reload the page.")
        kept = {row.id for row in rows}
        removed = [identity for pk, identity in existing.items() if pk not in kept]
        if removed and user_id is not None:
            LogEntry.objects.log_actions(user_id, removed, DELETION, "Removed in the set-up.")
        Identity.objects.filter(pk__in=[identity.pk for identity in removed]).delete()
        changed = [
            row
            for row in rows
            if row.id is not None
            and (row.name, row.side, row.color)
            != (existing[row.id].name, existing[row.id].side, existing[row.id].color)
        ]
        # Two identities may swap names: each renamed row first takes a name no identity has.
        for row in changed:
            Identity.objects.filter(pk=row.id).update(name=f"~{row.id}")
        for row in changed:
            Identity.objects.filter(pk=row.id).update(name=row.name, side=row.side, color=row.color)
        added = [
            Identity.objects.create(name=row.name, side=row.side, color=row.color)
            for row in rows
            if row.id is None
        ]
        if user_id is not None:
            if changed:
                renamed = list(Identity.objects.filter(pk__in=[row.id for row in changed]))
                LogEntry.objects.log_actions(user_id, renamed, CHANGE, "Changed in the set-up.")
            if added:
                LogEntry.objects.log_actions(user_id, added, ADDITION, "Added in the set-up.")
    return list(Identity.objects.order_by("id"))


def identities_check(rows: list[IdentityRow]) -> None:
    """Raise ``ValidationError`` with every reason ``rows`` cannot be the identities."""
    problems = []
    seen: set[str] = set()
    longest = Identity._meta.get_field("name").max_length
    for row in rows:
        label = f"“{row.name}”" if row.name else "An identity"
        if not row.name:
            problems.append("Every identity needs a name.")
        elif len(row.name) > longest:
            problems.append(f"{label} is too long: a name has at most {longest} characters.")
        elif not _passes(KEY_VALIDATOR, row.name):
            problems.append(
                f"{label} is not one word: a name has letters, digits, hyphens, "
                "underscores or apostrophes, no spaces."
            )
        elif row.name.casefold() in seen:
            problems.append(f"Two identities are called {label}: each name is used once.")
        if row.name:
            seen.add(row.name.casefold())
        if row.side not in IdentitySide.values:
            problems.append(f"{label} must speak for you or for the companion.")
        if not _passes(COLOR_VALIDATOR, row.color):
            problems.append(f"The colour of {label} must be written #rrggbb.")
    for side, whose in ((IdentitySide.USER, "you"), (IdentitySide.COMPANION, "the companion")):
        if not any(row.side == side for row in rows):
            problems.append(f"Keep at least one identity for {whose}.")
    if problems:
        raise ValidationError(problems)


def _passes(validator, value: str) -> bool:
    try:
        validator(value)
    except ValidationError:
        return False
    return True


def time_zone_set(*, name: str) -> None:
    """Keep ``name`` as the owner's time zone (``gem.zone.owner_time_zone``)."""
    name = name.strip()
    if not time_zone_known(name):
        raise ValidationError(
            f"“{name}” is not a time zone this machine knows: choose one such as Europe/London."
        )
    state_set(TIME_ZONE, name)


def text_version_add(
    *,
    model: type[VersionedText],
    content: str,
    author=None,
    at: datetime | None = None,
    pk: int | None = None,
    **text: str,
) -> VersionedText:
    """Save a new version of a text kept as versions (the ambient prose, a wake text, an agent's
    prompt): the one way a version is written, by a person's edit, a rename or fold, or an
    import. It becomes the text in use; the versions before it stay as they were.

    ``text`` names which text it is a version of (``model.text_fields``: a wake text's or a
    prompt's ``kind``). ``author`` is who wrote it as the model keeps it: an account or an
    account's id in the default store, a user name in the summaries store. ``at`` and ``pk``
    keep an imported version's time and id."""
    if set(text) != set(model.text_fields):
        raise TypeError(f"A version of {model.__name__} names its text by {model.text_fields}.")
    author_field = model._meta.get_field("author")
    if author is None and not author_field.null:
        author = ""  # kept as a user name: no name
    by = "author" if isinstance(author, models.Model | None) else author_field.attname
    return model.objects.create(
        pk=pk, content=content, created_at=at or timezone.now(), **{by: author}, **text
    )


def ambient_prose_set(
    *, content: str, author=None, at: datetime | None = None, pk: int | None = None
) -> AmbientProse:
    """Make ``content`` the ambient prose in use, as a new version (``text_version_add``):
    ``author`` an account or its id; ``at`` and ``pk`` keep an imported version's."""
    return text_version_add(model=AmbientProse, content=content, author=author, at=at, pk=pk)


# --- Fragments recorded elsewhere, written in bulk ---------------------------------------------

IMPORT_BATCH = 1_000


class FragmentRefused(ValueError):
    """A fragment recorded elsewhere that the Gem does not take, with why in words."""


@dataclass(frozen=True)
class FragmentRecorded:
    """A fragment as it was recorded elsewhere (an export, a legacy installation), to be written
    exactly: its key, tiers, both times and its triggers (none when the record has none)."""

    key: str
    ambient: str
    recognition: str
    inventory: str
    created_at: datetime
    updated_at: datetime
    triggers: Sequence[str] = ()


@dataclass(frozen=True)
class FragmentEdgeRecorded:
    """An edge as it was recorded elsewhere; ``id`` None takes the next one here."""

    source_id: str
    target_id: str
    relation: str = ""
    id: int | None = None


@dataclass(frozen=True)
class FragmentSourceRecorded:
    """A fragment's source event as it was recorded elsewhere; ``id`` None takes the next one."""

    fragment_id: str
    event_id: int
    id: int | None = None


def _rows_import(model: type[models.Model], rows: Iterable, built, *, then=None) -> int:
    """Write ``rows`` recorded elsewhere as ``model`` objects (``built``, one row each), a batch
    of ``IMPORT_BATCH`` at a time, in one transaction of the model's store; ``then`` is called
    with each batch once it is written. Returns how many."""
    written = 0
    with transaction.atomic(using=router.db_for_write(model)):
        for chunk in batched(rows, IMPORT_BATCH):
            model.objects.bulk_create([built(row) for row in chunk])
            if then is not None:
                then(chunk)
            written += len(chunk)
    return written


def fragments_import(*, rows: Iterable[FragmentRecorded]) -> int:
    """Write fragments recorded elsewhere exactly as they were (``FragmentRecorded``), a batch
    of ``IMPORT_BATCH`` at a time, in one transaction of the Gem's store. Returns how many.

    For the bulk imports (``manage.py import``, ``manage.py import_silentstar``), which checked
    every row where they read it: the keys are new here. No admin-log entry is written per row:
    the import says what it wrote. A key the same as another but for case, or a tier past the
    most a tier may hold (``gem.tier_size``), raises ``FragmentRefused`` and writes nothing."""
    cpt = chars_per_token()

    def checked(chunk) -> list[FragmentRecorded]:
        for row in chunk:
            for tier in TIERS:
                if refusal := tier_refusal(row.key, tier, getattr(row, tier), chars_per_token=cpt):
                    raise FragmentRefused(refusal)
        if refusal := twin_refusal([row.key for row in chunk], fragment_model=Fragment):
            raise FragmentRefused(refusal)
        return chunk

    def times_kept(chunk) -> None:
        by_time = defaultdict(list)  # updated_at is auto_now: set afterwards, one UPDATE a time
        for row in chunk:
            by_time[row.updated_at].append(row.key)
        for updated, keys in by_time.items():
            Fragment.objects.filter(key__in=keys).update(updated_at=updated)

    return _rows_import(
        Fragment,
        (row for chunk in batched(rows, IMPORT_BATCH) for row in checked(chunk)),
        lambda row: Fragment(
            key=row.key,
            key_folded=key_folded(row.key),
            ambient=row.ambient,
            recognition=row.recognition,
            inventory=row.inventory,
            triggers=list(row.triggers),
            created_at=row.created_at,
        ),
        then=times_kept,
    )


def edges_import(*, rows: Iterable[FragmentEdgeRecorded]) -> int:
    """Write edges recorded elsewhere exactly as they were (``FragmentEdgeRecorded``), between
    fragments already here, as ``fragments_import`` writes fragments. Returns how many."""
    return _rows_import(
        FragmentEdge,
        rows,
        lambda row: FragmentEdge(
            id=row.id, source_id=row.source_id, target_id=row.target_id, relation=row.relation
        ),
    )


def sources_import(*, rows: Iterable[FragmentSourceRecorded]) -> int:
    """Write fragments' source events recorded elsewhere exactly as they were
    (``FragmentSourceRecorded``), as ``fragments_import`` writes fragments. Returns how many."""
    return _rows_import(
        FragmentSource,
        rows,
        lambda row: FragmentSource(id=row.id, fragment_id=row.fragment_id, event_id=row.event_id),
    )
