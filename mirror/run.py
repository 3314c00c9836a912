"""A Mirror run: check the trigger, reflect the pending turns chunk by chunk, merge, record.

One run at a time (a partial unique index on ``MirrorRun.status = running``). What is pending is
read from the stores each time, never remembered: the turns after the last event any current L0
summary covers, up to the first turn still being answered. So a run over a range that is already
summarised does nothing, and a second run right after the first finds nothing to do.

A chunk is applied in one transaction of the ``summaries`` store: its L0 summary, its staged
suggestions and the clearing of the run's progress. Before that, the output of every pass is
kept in ``MirrorRun.progress`` as it arrives. A run whose worker died (no heartbeat for longer
than a task may run) is taken over by the next run and goes on from its next pass; after
``Q_CLUSTER["max_attempts"]`` such deaths it is rolled back instead: its unfinished chunk is
discarded (nothing of it was ever applied) and the next run starts that chunk afresh.
"""

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Max
from django.utils import timezone

from events.models import Event
from gem.selectors import identities_current
from gem.state import RECENT_WINDOW, state_get
from mirror.merge import NEXT_LEVEL, Span, merges_due
from mirror.models import MirrorRun, MirrorRunStatus, Proposer, Summary
from mirror.passes import PassResult, chunk_reflect, merge_reflect
from mirror.route import (
    FIRE_TURNS,
    HOLD_WINDOW_TURNS,
    HOLE_MARGIN_TURNS,
    Turn,
    chunks_of,
    do_density,
    hole_near,
    should_fire,
)
from mirror.services import Staged, suggestions_stage
from mirror.turns import open_from, turns_after, turns_before
from silentstar.claude import ClaudeError
from silentstar.tokens import estimate_tokens

logger = logging.getLogger(__name__)

SCHEDULED, MANUAL, REBUILD = "scheduled", "manual", "rebuild"
MIXED = "mixed"
EMPTY_REFLECTION = "(the Mirror answered nothing for this stretch)"


@dataclass(frozen=True)
class Pending:
    """What waits to be reflected, and what the trigger makes of it."""

    turns: list[Turn]
    hours_since_last: float
    hold_density: float  # DO density of the latest turns
    hole_near: bool = False  # Recent's oldest turns are about to pass the newest summary

    @property
    def fires(self) -> bool:
        return should_fire(
            len(self.turns), self.hours_since_last, self.hold_density, near=self.hole_near
        )


def stale_after() -> timedelta:
    """Silence after which a running run's worker is taken to be dead."""
    return timedelta(seconds=settings.Q_CLUSTER["timeout"] + 60)


def last_summarised() -> int:
    """The last event a current L0 summary covers (0 when there is none)."""
    found = Summary.objects.filter(level="L0", superseded_by__isnull=True).aggregate(
        last=Max("last_event_id")
    )
    return found["last"] or 0


# Pending turns a check reads at most: what one run reflects before its deadline, many times
# over. After a large import the whole backlog would be read on every check; the rest waits.
PENDING_CHUNKS_READ = 50


def pending_read(*, now: datetime, sides: dict[str, str]) -> Pending:
    last = last_summarised()
    cap = PENDING_CHUNKS_READ * max(settings.MIRROR_CHUNK_TURNS, FIRE_TURNS)
    turns = turns_after(last, sides=sides, limit=cap)
    # Time is read on the log's own clock: since the last event the Mirror reflected (its last
    # run happened right after it), or since the first pending event when it never ran.
    since = Event.objects.filter(pk=last).values_list("ts", flat=True).first()
    since = since or (turns[0].events[0].ts if turns else now)
    latest = turns[-HOLD_WINDOW_TURNS:]
    if len(turns) == cap:  # more are pending: the moment is in the log's newest turns
        end = open_from() or (Event.objects.aggregate(last=Max("pk"))["last"] + 1)
        latest = turns_before(end, count=HOLD_WINDOW_TURNS, sides=sides)
    return Pending(
        turns=turns,
        hours_since_last=max((now - since).total_seconds(), 0) / 3600,
        hold_density=do_density(line for turn in latest for line in turn.lines),
        hole_near=bool(turns) and _hole_near(last, sides=sides),
    )


def _hole_near(last: int, *, sides: dict[str, str]) -> bool:
    """``mirror.route.hole_near`` for the window the last turn's context showed (recorded by the
    Heart) and the turns summarised up to event ``last``."""
    window = state_get(RECENT_WINDOW, None)
    if not window:
        return False
    summarised = turns_before(last + 1, count=HOLE_MARGIN_TURNS + 1, sides=sides) if last else []
    return hole_near(
        window_first=window.get("first_event"),
        window_full=bool(window.get("full")),
        summarised_turn_starts=[turn.first_event_id for turn in summarised],
    )


def mirror_run(
    *,
    kind: str = SCHEDULED,
    force: bool = False,
    now: datetime | None = None,
    deadline: datetime | None = None,
) -> MirrorRun | None:
    """Run the Mirror if its trigger fires (always with ``force``); None when it did not run.

    A crashed run is recovered first (resumed or rolled back). ``deadline`` stops taking new
    chunks after that moment; the rest waits for the next run.
    """
    now = now or timezone.now()
    sides = identities_current().sides
    resumed = runs_recover(now=now)
    if resumed is not None:
        return _run_continue(resumed, sides=sides, deadline=deadline)
    pending = pending_read(now=now, sides=sides)
    if not pending.turns or not (force or pending.fires):
        return None
    keep_short = force or len(pending.turns) < settings.MIRROR_CHUNK_TURNS
    chunks = chunks_of(pending.turns, size=settings.MIRROR_CHUNK_TURNS, keep_short=keep_short)
    if not chunks:
        return None
    run = run_claim(kind=kind, first=chunks[0][0].first_event_id, last=chunks[-1][-1].last_event_id)
    if run is None:
        return None
    return _run_continue(run, sides=sides, deadline=deadline)


def run_claim(*, kind: str, first: int | None, last: int | None) -> MirrorRun | None:
    """Start a run, unless one is already running."""
    now = timezone.now()
    try:
        with transaction.atomic(using="summaries"):
            return MirrorRun.objects.create(
                kind=kind,
                first_event_id=first,
                last_event_id=last,
                started_at=now,
                heartbeat_at=now,
            )
    except IntegrityError:
        return None


def runs_recover(*, now: datetime) -> MirrorRun | None:
    """A run whose worker died, taken over to resume it; or rolled back after too many deaths."""
    stale = (
        MirrorRun.objects.filter(
            status=MirrorRunStatus.RUNNING, heartbeat_at__lt=now - stale_after()
        )
        .order_by("started_at")
        .first()
    )
    if stale is None:
        return None
    if stale.attempts >= settings.Q_CLUSTER["max_attempts"]:
        MirrorRun.objects.filter(pk=stale.pk, status=MirrorRunStatus.RUNNING).update(
            status=MirrorRunStatus.ROLLED_BACK,
            completed_at=timezone.now(),
            progress={},
            error=(
                f"The worker stopped during this run {stale.attempts} times; its unfinished "
                "chunk was discarded (nothing of it had been applied) and will be done again."
            ),
        )
        return None
    taken = MirrorRun.objects.filter(
        pk=stale.pk, status=MirrorRunStatus.RUNNING, heartbeat_at=stale.heartbeat_at
    ).update(attempts=stale.attempts + 1, heartbeat_at=timezone.now())
    if not taken:
        return None
    stale.refresh_from_db()
    logger.warning("Resuming Mirror run %s, left unfinished by a worker that stopped", stale.pk)
    return stale


def _run_continue(run: MirrorRun, *, sides: dict[str, str], deadline: datetime | None) -> MirrorRun:
    try:
        while deadline is None or timezone.now() < deadline:
            chunk = _next_chunk(run, sides=sides)
            if chunk is None:
                break
            _chunk_apply(run, chunk, sides=sides)
            _merges_apply(run)
        _merges_apply(run)
    except ClaudeError as error:
        _run_finish(run, status=MirrorRunStatus.FAILED, error=str(error))
    except Exception as error:
        logger.exception("Mirror run %s failed", run.pk)
        _run_finish(run, status=MirrorRunStatus.FAILED, error=f"{type(error).__name__}: {error}")
    else:
        _run_finish(run, status=MirrorRunStatus.DONE, error="")
    return MirrorRun.objects.get(pk=run.pk)


def _run_finish(run: MirrorRun, *, status: str, error: str) -> None:
    MirrorRun.objects.filter(pk=run.pk).update(
        status=status, error=error, completed_at=timezone.now(), usage=run.usage, route=run.route
    )


def _next_chunk(run: MirrorRun, *, sides: dict[str, str]) -> list[Turn] | None:
    turns = [
        turn
        for turn in turns_after(last_summarised(), sides=sides, limit=settings.MIRROR_CHUNK_TURNS)
        if run.last_event_id is None or turn.last_event_id <= run.last_event_id
    ]
    chunks = chunks_of(turns, size=settings.MIRROR_CHUNK_TURNS, keep_short=True)
    return chunks[0] if chunks else None


def usage_add(usage: dict, result: PassResult) -> None:
    """Count one pass's call and tokens into a run's usage, by pass role."""
    entry = usage.setdefault(
        result.role,
        {
            "model": result.model,
            "calls": 0,
            "input_tokens": 0,
            "output_tokens": 0,
            "cache_read_tokens": 0,
            "cache_write_tokens": 0,
        },
    )
    entry["model"] = result.model
    entry["calls"] += 1
    entry["input_tokens"] += result.usage.input_tokens
    entry["output_tokens"] += result.usage.output_tokens
    entry["cache_read_tokens"] += result.usage.cache_read_tokens
    entry["cache_write_tokens"] += result.usage.cache_write_tokens


def previous_summary(*, level: str, before: int) -> str:
    """The text of the newest current summary of ``level`` ending before event ``before``."""
    latest = (
        Summary.objects.filter(level=level, superseded_by__isnull=True, last_event_id__lt=before)
        .order_by("-last_event_id", "-id")
        .values_list("content", flat=True)
        .first()
    )
    return latest or ""


def _chunk_apply(run: MirrorRun, turns: list[Turn], *, sides: dict[str, str]) -> None:
    first, last = turns[0].first_event_id, turns[-1].last_event_id
    progress = run.progress if run.progress.get("chunk") == [first, last] else {}

    def record(result: PassResult, outputs: dict[str, str]) -> None:
        usage_add(run.usage, result)
        run.progress = {"chunk": [first, last], "outputs": outputs}
        MirrorRun.objects.filter(pk=run.pk).update(
            progress=run.progress, usage=run.usage, heartbeat_at=timezone.now()
        )

    reflection = chunk_reflect(
        turns=turns,
        context=turns_before(first, count=settings.MIRROR_CONTEXT_TURNS, sides=sides),
        previous=previous_summary(level="L0", before=first),
        done=progress.get("outputs", {}),
        record=record,
    )
    content = (
        reflection.output.content or reflection.outputs.get("summarise", "") or EMPTY_REFLECTION
    )
    run.route = reflection.route if run.route in ("", reflection.route) else MIXED
    chunks = run.usage.setdefault("chunks", {})
    with transaction.atomic(using="summaries"):
        exists = Summary.objects.filter(
            level="L0", superseded_by__isnull=True, first_event_id=first, last_event_id=last
        ).exists()
        if not exists:
            summary = Summary.objects.create(
                level="L0",
                first_event_id=first,
                last_event_id=last,
                content=content,
                tokens=estimate_tokens(content),
                run=run,
            )
            suggestions_stage(
                proposer=Proposer.MIRROR,
                summary=summary,
                suggestions=[
                    Staged(type=s.type, content=s.content, subject=s.subject)
                    for s in reflection.output.suggestions
                ],
                cap=settings.MIRROR_SUGGESTION_CAP,
            )
            chunks[reflection.route] = chunks.get(reflection.route, 0) + 1
        run.progress = {}
        MirrorRun.objects.filter(pk=run.pk).update(
            progress={}, usage=run.usage, route=run.route, heartbeat_at=timezone.now()
        )


def current_spans() -> list[Span]:
    return [
        Span(*row)
        for row in Summary.objects.filter(superseded_by__isnull=True).values_list(
            "id", "level", "first_event_id", "last_event_id"
        )
    ]


def _merges_apply(run: MirrorRun) -> None:
    """Merge every whole group of three, level by level, until none is due."""
    for level in NEXT_LEVEL:
        while groups := merges_due(current_spans(), level):
            group = groups[0]
            upper = NEXT_LEVEL[level]
            first, last = group[0].first_event_id, group[-1].last_event_id
            texts = dict(
                Summary.objects.filter(pk__in=[s.id for s in group]).values_list("id", "content")
            )
            parts = [
                (f"{s.level}, events {s.first_event_id}-{s.last_event_id}", texts[s.id])
                for s in group
            ]
            result, output = merge_reflect(
                parts=parts, previous=previous_summary(level=upper, before=first)
            )
            usage_add(run.usage, result)
            content = output.content or result.text.strip() or EMPTY_REFLECTION
            with transaction.atomic(using="summaries"):
                Summary.objects.create(
                    level=upper,
                    first_event_id=first,
                    last_event_id=last,
                    content=content,
                    tokens=estimate_tokens(content),
                    run=run,
                )
                MirrorRun.objects.filter(pk=run.pk).update(
                    usage=run.usage, heartbeat_at=timezone.now()
                )
