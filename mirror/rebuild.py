"""Rebuild: summaries regenerated from the log (after a new prompt or model, or a correction).

``rebuild_plan`` reads the current summaries in a range, runs the same passes again on the exact
event ranges of its L0 summaries and merges again every L1 and L2 that covers one of them, and
returns old and new side by side; it writes nothing. ``rebuild_apply`` then writes the new ones
in one transaction: each new summary keeps its predecessor's level and range, the old one is
marked superseded by it (kept, never deleted), and the new suggestions are staged after the same
cap and de-duplication as a run's. It refuses when a summary of the plan was replaced meanwhile.
``stale_rebuilt`` does both for each summary written before a correction of what it covers.
"""

import difflib
from dataclasses import dataclass, field

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from gem.selectors import identities_current
from mirror.merge import Span, covers
from mirror.models import MirrorRun, MirrorRunStatus, Proposer, Summary
from mirror.output import Suggestion
from mirror.passes import chunk_reflect, merge_reflect
from mirror.route import MERGE
from mirror.run import (
    EMPTY_REFLECTION,
    REBUILD,
    previous_summary,
    run_claim,
    usage_add,
)
from mirror.selectors import summaries_stale
from mirror.services import Staged, suggestions_stage, suggestions_withdraw
from mirror.turns import turns_before, turns_between
from silentstar.tokens import estimate_tokens


class RebuildError(ValueError):
    """A rebuild that cannot be applied, and why."""


@dataclass
class Replacement:
    old: Summary
    content: str
    route: str  # two-pass, three-pass or merge
    suggestions: list[Suggestion] = field(default_factory=list)

    def diff(self) -> str:
        """Old and new, line by line, as a unified diff."""
        return "\n".join(
            difflib.unified_diff(
                self.old.content.splitlines(),
                self.content.splitlines(),
                fromfile=f"old #{self.old.pk}",
                tofile="new",
                lineterm="",
            )
        )


@dataclass
class RebuildPlan:
    replacements: list[Replacement]
    usage: dict


def rebuild_plan(*, first: int | None = None, last: int | None = None) -> RebuildPlan:
    """Regenerate the current summaries of events ``first``…``last`` (all when not given)."""
    low, high = first or 0, last if last is not None else float("inf")
    current = list(
        Summary.objects.filter(superseded_by__isnull=True).order_by("first_event_id", "id")
    )
    chosen = [
        s
        for s in current
        if s.level == "L0" and low <= s.first_event_id and s.last_event_id <= high
    ]
    usage: dict = {}
    new_text: dict[int, str] = {}
    replacements: list[Replacement] = []
    sides = identities_current().sides
    previous_new = None
    for summary in chosen:
        previous = (
            previous_new
            if previous_new is not None
            else previous_summary(level="L0", before=summary.first_event_id)
        )
        reflection = chunk_reflect(
            turns=turns_between(summary.first_event_id, summary.last_event_id, sides=sides),
            context=turns_before(
                summary.first_event_id, count=settings.MIRROR_CONTEXT_TURNS, sides=sides
            ),
            previous=previous,
            done={},
            record=lambda result, outputs: usage_add(usage, result),
        )
        content = reflection.output.content or EMPTY_REFLECTION
        new_text[summary.pk] = previous_new = content
        replacements.append(
            Replacement(summary, content, reflection.route, list(reflection.output.suggestions))
        )
    touched = {s.pk for s in chosen}
    for lower, upper in (("L0", "L1"), ("L1", "L2")):
        below = [s for s in current if s.level == lower]
        previous_new = None
        for summary in (s for s in current if s.level == upper):
            parts = [s for s in below if covers(_span(summary), _span(s))]
            if not any(part.pk in touched for part in parts):
                continue
            previous = (
                previous_new
                if previous_new is not None
                else previous_summary(level=upper, before=summary.first_event_id)
            )
            result, output = merge_reflect(
                parts=[
                    (
                        f"{p.level}, events {p.first_event_id}-{p.last_event_id}",
                        new_text.get(p.pk, p.content),
                    )
                    for p in parts
                ],
                previous=previous,
            )
            usage_add(usage, result)
            content = output.content or result.text.strip() or EMPTY_REFLECTION
            new_text[summary.pk] = previous_new = content
            touched.add(summary.pk)
            replacements.append(Replacement(summary, content, MERGE))
    return RebuildPlan(replacements, usage)


def _span(summary: Summary) -> Span:
    return Span(summary.pk, summary.level, summary.first_event_id, summary.last_event_id)


def rebuild_apply(*, plan: RebuildPlan, withdraw: bool = False) -> MirrorRun:
    """Write the plan's new summaries, superseding the old ones; recorded as a rebuild run.
    ``withdraw``: the suggestions still pending from the old ones are withdrawn first, in the
    same transaction (``mirror.services.suggestions_withdraw``)."""
    if not plan.replacements:
        raise RebuildError("There is nothing to rebuild in that range.")
    olds = [r.old for r in plan.replacements]
    run = run_claim(
        kind=REBUILD,
        first=min(s.first_event_id for s in olds),
        last=max(s.last_event_id for s in olds),
    )
    if run is None:
        raise RebuildError(
            "Another Mirror run is under way; try the rebuild again when it is done."
        )
    try:
        with transaction.atomic(using="summaries"):
            if withdraw:
                suggestions_withdraw(summary_ids=[r.old.pk for r in plan.replacements])
            for replacement in plan.replacements:
                new = Summary.objects.create(
                    level=replacement.old.level,
                    first_event_id=replacement.old.first_event_id,
                    last_event_id=replacement.old.last_event_id,
                    content=replacement.content,
                    tokens=estimate_tokens(replacement.content),
                    run=run,
                )
                if not Summary.objects.filter(
                    pk=replacement.old.pk, superseded_by__isnull=True
                ).update(superseded_by=new):
                    raise RebuildError(
                        f"Summary {replacement.old.pk} ({replacement.old}) was replaced while "
                        "the rebuild was being prepared; nothing was changed. Run it again."
                    )
                suggestions_stage(
                    proposer=Proposer.MIRROR,
                    summary=new,
                    suggestions=[
                        Staged(type=s.type, content=s.content, subject=s.subject)
                        for s in replacement.suggestions
                    ],
                    cap=settings.MIRROR_SUGGESTION_CAP,
                )
    except Exception as error:
        MirrorRun.objects.filter(pk=run.pk).update(
            status=MirrorRunStatus.FAILED,
            error=str(error),
            completed_at=timezone.now(),
            usage=plan.usage,
        )
        raise
    routes = {r.route for r in plan.replacements if r.route != MERGE}
    MirrorRun.objects.filter(pk=run.pk).update(
        status=MirrorRunStatus.DONE,
        completed_at=timezone.now(),
        usage=plan.usage,
        route=routes.pop() if len(routes) == 1 else ("mixed" if routes else ""),
    )
    return MirrorRun.objects.get(pk=run.pk)


def stale_rebuilt() -> list[MirrorRun]:
    """Write again, from the log as corrected, each current L0 summary written before a
    correction of an event it covers, with the L1 and L2 above it (``summaries_stale``): one
    rebuild each, oldest first. The suggestions still pending from the summaries written again
    are withdrawn: the new summaries stage their own. A rebuild that fails changes nothing: its
    summaries stay withheld from the context, their suggestions wait, and the next run tries
    again."""
    current = Summary.objects.filter(superseded_by__isnull=True, level="L0").values_list(
        "id", "first_event_id", "last_event_id", "created_at"
    )
    stale = Summary.objects.filter(pk__in=summaries_stale(current)).order_by("first_event_id")
    runs = []
    for summary in stale:
        plan = rebuild_plan(first=summary.first_event_id, last=summary.last_event_id)
        runs.append(rebuild_apply(plan=plan, withdraw=True))
    return runs
