import sys
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from transfer.legacy import BATCH, TABLES, LegacyError, LegacyReport, legacy_import
from transfer.lock import TransferBusy, one_at_a_time

BAR_FROM = 20_000  # events from which the stages show a progress bar (on a terminal)


class Command(BaseCommand):
    help = (
        "Import a database of the seed Silentstar, schema version 1 to 5, into this "
        "installation: events and their tags, working memory (v1's plans become plan items), "
        "fragments, edges, sources, state and maintenance runs, with ids, times and text as "
        "they were. Everything is checked before anything is written; a file that is not such "
        "a database, a v5 pair whose halves disagree, or rows that this installation holds "
        "otherwise are refused, and nothing changes. A second run adds nothing. Stop the web "
        "and the worker first. See docs/legacy-import.md."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "path",
            type=Path,
            help="The legacy database (memory.sqlite, or v5's silentstar.sqlite).",
        )
        parser.add_argument(
            "--events",
            type=Path,
            dest="events_path",
            metavar="PATH",
            help="Schema v5's events file (default: events.sqlite beside PATH).",
        )
        parser.add_argument(
            "--time-zone",
            metavar="ZONE",
            help="The zone of times written without one (default: SILENTSTAR_TIME_ZONE).",
        )
        parser.add_argument(
            "--dry-run", action="store_true", help="Check and report only; write nothing."
        )
        parser.add_argument(
            "--batch", type=int, default=BATCH, help=f"Events per transaction ({BATCH:,})."
        )

    def handle(self, *args, path, events_path, time_zone, dry_run, batch, verbosity, **options):
        if batch < 1:
            raise CommandError("--batch must be at least 1")
        bars: dict[str, tqdm] = {}

        def progress(stage: str, done: int, total: int) -> None:
            if total < BAR_FROM or verbosity < 1:
                return
            if stage not in bars:
                bars[stage] = tqdm(
                    total=total,
                    desc=stage,
                    unit=" events",
                    unit_scale=True,
                    mininterval=1,
                    file=sys.stderr,
                )
            bars[stage].update(done - bars[stage].n)
            if done >= total:
                bars[stage].close()

        try:
            with one_at_a_time(what="import"):
                report = legacy_import(
                    path=path,
                    events_path=events_path,
                    time_zone=time_zone,
                    dry_run=dry_run,
                    batch_size=batch,
                    progress=progress,
                )
        except TransferBusy as error:
            raise CommandError(f"Import refused, nothing was changed: {error}") from None
        except LegacyError as error:
            if error.written:
                raise CommandError(f"Import stopped part-way: {error}") from None
            raise CommandError(f"Import refused, nothing was changed: {error}") from None
        finally:
            for bar in bars.values():
                bar.close()
        self.stdout.write(report_text(report))


def report_text(report: LegacyReport) -> str:
    """The report a person reads at the end: per table, then what else is worth knowing."""
    source = f"{report.path} (schema v{report.version})"
    if report.events_path:
        source += f" with its events file {report.events_path}"
    verb = "Checked" if report.dry_run else "Imported"
    lines = [f"{verb} {source} in {report.seconds:.1f} s.", ""]
    heading = "would import" if report.dry_run else "imported"
    lines.append(f"{'':<22}{heading:>14}{'already here':>14}{'skipped':>10}")
    for table in TABLES:
        counted = report.tables[table]
        lines.append(
            f"{table:<22}{counted.imported:>14,}{counted.already:>14,}"
            f"{sum(counted.skipped.values()):>10,}"
        )
    skipped = [
        f"  {table}: {n:,} {reason} (e.g. {'; '.join(report.tables[table].examples[reason])})"
        for table in TABLES
        for reason, n in report.tables[table].skipped.items()
    ]
    if skipped:
        lines += ["", "Skipped:", *skipped]
    before, after = report.turn_counter
    lines += ["", f"Turn counter: {after:,}" + (f" (was {before:,})" if after != before else "")]
    if report.naive_times:
        lines.append(
            f"Times written without a zone ({report.naive_times:,}) were read in "
            f"{report.time_zone}."
        )
    if report.images_named:
        line = f"Images: {report.images_named:,} events name one"
        if report.images_missing:
            line += (
                f"; {report.images_missing:,} of the files are not in the media folder (first: "
                f"{', '.join(report.images_missing_examples)}): copy the old installation's "
                "images there, at the same relative paths"
            )
        lines.append(line + ".")
    lines += report.notes
    if not report.dry_run and report.tables["events"].imported:
        lines.append(
            "The search finds the imported events already. With the semantic search on, run "
            "manage.py search_vectors to write their vectors. The Mirror will summarise the "
            "imported history on its next runs."
        )
    if report.nothing_new:
        lines.append("Nothing new: everything in the file is already here.")
    return "\n".join(lines)
