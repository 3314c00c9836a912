"""Moving working memory that is no longer active into the archive (``gem.archive_store``), and
back: ``archive_run`` (scheduled daily) and ``archive_restore``. docs/archive.md tells the rules.

Nothing is lost on the way. A run writes the lines and reads them back, writes the index with the
items marked ``moving``, and only then removes the rows, in one transaction, and marks them
``archived``. A restore marks them ``restoring``, writes the rows back through
``working_memory_create`` (``gem.rows.working_memory_from_row``) in one transaction, and then
takes them out of the index. Whatever stops a run between those steps, an item is in the database
or in the archive, and the next run or restore finishes the move (``_unfinished_finish``).

Events are never archived: only working-memory rows move. Working memory is not append-only, so
the rows really leave the database, with their fragment links and sources inside their line. An
active item flagged as the near duplicate of one that leaves loses that flag (its link is set to
null); the twin it named is no longer active memory.
"""

import json
import logging
from collections import defaultdict
from collections.abc import Callable, Iterable
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from zoneinfo import ZoneInfo

from django.conf import settings
from django.db import connections, router, transaction
from django.utils import timezone

from gem.archive_store import (
    ARCHIVED,
    MOVING,
    RESTORING,
    ArchiveError,
    archive_storage,
    archived_rows,
    entries_matching,
    index_entry,
    index_read,
    index_write,
    line,
    lines_read,
    lines_write,
)
from gem.models import State, WorkingMemory, WorkingMemoryStatus
from gem.prune import Candidate, Limits, Phase, prune_plan
from gem.rows import working_memory_from_row, working_memory_row
from gem.state import ARCHIVE_WARNING, state_set
from gem.zone import owner_time_zone
from silentstar.words import counted

logger = logging.getLogger(__name__)

# One run or restore at a time: two would each rewrite the index without the other's items.
RUN_CLAIM = "archive_run"
CLAIM_STALE = timedelta(hours=1)  # a claim this old was left by a process that died


def archive_limits() -> Limits:
    return Limits(
        after_days=settings.ARCHIVE_AFTER_DAYS,
        capacity=settings.ARCHIVE_CAPACITY_BYTES,
        soft=settings.ARCHIVE_SOFT,
        hard=settings.ARCHIVE_HARD,
        emergency=settings.ARCHIVE_EMERGENCY,
        hard_target=settings.ARCHIVE_HARD_TARGET,
    )


@dataclass
class ArchiveReport:
    phase: Phase
    size: int  # bytes of working memory before the run
    size_after: int
    capacity: int
    archived: list[int] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    finished: list[int] = field(default_factory=list)  # left half-moved by a stopped run
    dry_run: bool = False

    @property
    def warning(self) -> str:
        """What a person should hear about the size, or nothing."""
        if self.phase is Phase.NONE:
            return ""
        share = f"{self.size / self.capacity:.0%} of SILENTSTAR_ARCHIVE_CAPACITY_BYTES"
        after = f"{self.size_after / self.capacity:.0%}"
        if self.phase is Phase.EMERGENCY:
            return (
                f"Working memory is full: {self.size} bytes, {share}; after archiving {after}. "
                "Nothing is refused, but the store keeps growing: raise the capacity or resolve "
                "active items in the Anvil."
            )
        return f"Working memory is at {share} ({self.phase.name.lower()} pruning); now {after}."


def _idle_since(item: WorkingMemory) -> datetime:
    return item.resolved_at or item.refreshed_at


def _day(row: dict, zone: ZoneInfo) -> date:
    """The day an item left active memory, in the owner's time zone: its ``by-date`` file."""
    idle_since = datetime.fromisoformat(row["resolved_at"] or row["refreshed_at"])
    return idle_since.astimezone(zone).date()


def working_memory_measured() -> tuple[list[Candidate], dict[int, dict]]:
    """Every item as a pruning candidate (its size is its archive line's), and the rows of
    those no longer active."""
    candidates, rows = [], {}
    items = WorkingMemory.objects.prefetch_related("refs", "sources").order_by("pk")
    for item in items.iterator(chunk_size=1000):
        row = working_memory_row(item)
        candidates.append(
            Candidate(
                id=item.pk,
                status=item.status,
                type=item.type,
                importance=item.importance,
                idle_since=_idle_since(item),
                size=len(line(row).encode()),
            )
        )
        if item.status != WorkingMemoryStatus.ACTIVE:
            rows[item.pk] = row
    return candidates, rows


def archive_run(
    *, now: datetime, dry_run: bool = False, progress: Callable[[str], None] = lambda _: None
) -> ArchiveReport:
    """Move the items ``gem.prune.prune_plan`` picks into the archive; ``dry_run`` only says
    which."""
    with _claimed():
        storage = archive_storage()
        entries = index_read(storage)
        finished = [] if dry_run else _unfinished_finish(storage, entries)
        candidates, rows = working_memory_measured()
        limits = archive_limits()
        plan = prune_plan(candidates, now=now, limits=limits)
        report = ArchiveReport(
            phase=plan.phase,
            size=plan.size,
            size_after=plan.size_after,
            capacity=limits.capacity,
            archived=list(plan.ids),
            finished=finished,
            dry_run=dry_run,
        )
        if report.warning:
            log = logger.error if plan.phase is Phase.EMERGENCY else logger.warning
            log("%s", report.warning)
        if not dry_run:  # the Anvil says it until a run finds the size fine again
            state_set(ARCHIVE_WARNING, report.warning)
        if dry_run or not plan.ids:
            return report
        by_day = defaultdict(list)
        zone = ZoneInfo(owner_time_zone())
        for pk in plan.ids:
            by_day[_day(rows[pk], zone)].append(rows[pk])
        stamp = now.isoformat()
        for day, day_rows in sorted(by_day.items()):
            name = lines_write(storage, day, day_rows)
            if lines_read(storage, name) != day_rows:
                raise ArchiveError(f"{name} did not read back as written: nothing was removed.")
            for number, row in enumerate(day_rows):
                entries[row["id"]] = index_entry(
                    row, file=name, line=number, day=day, archived_at=stamp
                )
            report.files.append(name)
            progress(f"{name}: {counted(len(day_rows), 'item')}")
        index_write(storage, entries)
        removed = _rows_remove({pk: rows[pk] for pk in plan.ids})
        for pk in plan.ids:
            if pk in removed:
                entries[pk]["state"] = ARCHIVED
            else:  # changed since it was read (a person made it active again): it stays
                del entries[pk]
        index_write(storage, entries)
        report.archived = sorted(removed)
        logger.info("Archived %d working-memory item(s)", len(removed))
        return report


def _rows_remove(rows: dict[int, dict]) -> set[int]:
    """Delete the items whose row is still exactly ``rows[id]``; return their ids."""
    with transaction.atomic(using=router.db_for_write(WorkingMemory)):
        items = (
            WorkingMemory.objects.select_for_update()
            .filter(pk__in=list(rows))
            .prefetch_related("refs", "sources")
        )
        same = [item.pk for item in items if working_memory_row(item) == rows[item.pk]]
        WorkingMemory.objects.filter(pk__in=same).delete()
    return set(same)


def _unfinished_finish(storage, entries: dict[int, dict]) -> list[int]:
    """Finish the moves and restores a stopped run left half-done; return their ids.

    A ``moving`` item still in the database leaves it now if its row is what was archived;
    if it has changed since, the database is right and its archive entry goes. A ``restoring``
    item in the database is restored; one that is not stays archived.
    """
    unfinished = {key: entry for key, entry in entries.items() if entry["state"] != ARCHIVED}
    if not unfinished:
        return []
    present = set(
        WorkingMemory.objects.filter(pk__in=list(unfinished)).values_list("pk", flat=True)
    )
    still_moving = {
        key: entry
        for key, entry in unfinished.items()
        if entry["state"] == MOVING and key in present
    }
    removed = _rows_remove(archived_rows(storage, still_moving))
    for key, entry in unfinished.items():
        if key in present and key not in removed:
            del entries[key]
        else:
            entry["state"] = ARCHIVED
    index_write(storage, entries)
    logger.info("Finished moving %d item(s) a stopped archive run left", len(unfinished))
    return sorted(unfinished)


@dataclass
class RestoreReport:
    restored: list[int] = field(default_factory=list)
    already: list[int] = field(default_factory=list)  # in working memory, not in the archive
    finished: list[int] = field(default_factory=list)


def archive_restore(
    *,
    ids: Iterable[int] = (),
    since: date | None = None,
    until: date | None = None,
    type: str | None = None,
    progress: Callable[[str], None] = lambda _: None,
) -> RestoreReport:
    """Bring archived items back into working memory exactly as they were.

    ``ids`` and the filters hold together (``gem.archive_store.entries_matching``). An id
    already back in working memory is left alone, so a second restore adds nothing.
    """
    ids = set(ids)
    if not ids and since is None and until is None and type is None:
        raise ArchiveError("Say what to restore: ids, or --since, --until or --type.")
    with _claimed():
        storage = archive_storage()
        entries = index_read(storage)
        report = RestoreReport(finished=_unfinished_finish(storage, entries))
        chosen = set(
            entries_matching(entries, ids=ids or None, since=since, until=until, type=type)
        )
        outside = ids - chosen
        report.already = sorted(
            WorkingMemory.objects.filter(pk__in=list(outside)).values_list("pk", flat=True)
        )
        if unknown := sorted(outside - set(report.already) - set(entries)):
            raise ArchiveError(
                f"Not in the archive nor in working memory: {', '.join(map(str, unknown))}."
            )
        if not chosen:
            return report
        for key in chosen:
            entries[key]["state"] = RESTORING
        index_write(storage, entries)
        try:
            rows = archived_rows(storage, {key: entries[key] for key in chosen})
            with transaction.atomic(using=router.db_for_write(WorkingMemory)):
                # Oldest first: a near-duplicate link names an older item, restored first.
                for key in sorted(rows):
                    working_memory_from_row(rows[key])
                _id_sequence_advance(max(rows))
        except Exception:
            for key in chosen:
                entries[key]["state"] = ARCHIVED
            index_write(storage, entries)
            raise
        for key in chosen:
            del entries[key]
        index_write(storage, entries)
        report.restored = sorted(chosen)
        progress(f"Restored {counted(len(chosen), 'item')}.")
        return report


def _id_sequence_advance(highest: int) -> None:
    """Make sure PostgreSQL's id sequence is past ``highest``, never moving it back.

    Archived ids were handed out by this sequence, so it is normally past them already (not
    after the archive is brought to a fresh installation). Django's ``sequence_reset_sql`` would
    set it to the highest id present, and so hand out again the ids of items still archived.
    SQLite's AUTOINCREMENT follows written ids by itself.
    """
    connection = connections[router.db_for_write(WorkingMemory)]
    if connection.vendor != "postgresql":
        return
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT setval(seq, GREATEST(%s, COALESCE(pg_sequence_last_value(seq), 0))) "
            "FROM (SELECT pg_get_serial_sequence(%s, 'id')::regclass AS seq) AS sequence",
            [highest, WorkingMemory._meta.db_table],
        )


@contextmanager
def _claimed():
    """Hold the one archive claim (a ``State`` row) for the duration, or refuse."""
    started = timezone.now()
    with transaction.atomic(using=router.db_for_write(State)):
        claim, created = State.objects.select_for_update().get_or_create(
            key=RUN_CLAIM, defaults={"value": json.dumps(started.isoformat())}
        )
        if not created:
            since = datetime.fromisoformat(json.loads(claim.value))
            if started - since < CLAIM_STALE:
                raise ArchiveError(
                    f"Another archive run or restore has been going on since {since:%H:%M} "
                    "(UTC): try again when it ends."
                )
            claim.value = json.dumps(started.isoformat())
            claim.save(update_fields=["value", "updated_at"])
    try:
        yield
    finally:
        State.objects.filter(key=RUN_CLAIM).delete()
