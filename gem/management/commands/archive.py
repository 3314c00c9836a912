"""``manage.py archive run | restore | list``: the working-memory archive (gem/archive.py)."""

from datetime import date

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils import timezone

from gem.archive import archive_restore, archive_run
from gem.archive_store import ArchiveError, archive_storage, entries_matching, index_read
from gem.meaning import semantic_hash
from gem.models import WorkingMemoryType
from silentstar.words import counted


def _day(text: str) -> date:
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise CommandError(f"“{text}” is not a date (2026-03-01).") from None


def _filters(parser: CommandParser) -> None:
    parser.add_argument("--since", type=_day, help="Items that left on or after this day.")
    parser.add_argument("--until", type=_day, help="Items that left before this day.")
    parser.add_argument("--type", choices=WorkingMemoryType.values, help="Items of this type.")


class Command(BaseCommand):
    help = (
        "Move old working memory that is no longer active to the archive (run), bring items "
        "back (restore), or list what is there (list). See docs/archive.md."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        actions = parser.add_subparsers(dest="action", required=True)
        run = actions.add_parser("run", help="Archive what the age and the thresholds pick.")
        run.add_argument(
            "--dry-run", action="store_true", help="Say what would move; move nothing."
        )
        restore = actions.add_parser("restore", help="Bring archived items back.")
        restore.add_argument("ids", nargs="*", type=int, metavar="ID")
        _filters(restore)
        listing = actions.add_parser("list", help="The archived items, oldest day first.")
        _filters(listing)
        listing.add_argument(
            "--like", metavar="WORDS", help="Items that mean the same (the same semantic hash)."
        )

    def handle(self, *args, action: str, **options):
        try:
            getattr(self, f"_{action}")(**options)
        except ArchiveError as error:
            raise CommandError(str(error)) from error

    def _run(self, *, dry_run: bool, **_):
        report = archive_run(now=timezone.now(), dry_run=dry_run, progress=self.stdout.write)
        if report.finished:
            self.stdout.write(
                f"Finished {counted(len(report.finished), 'move')} a stopped run left."
            )
        if report.warning:
            self.stderr.write(report.warning)
        ids = ", ".join(map(str, report.archived)) or "none"
        verb = "Would archive" if dry_run else "Archived"
        self.stdout.write(f"{verb} {counted(len(report.archived), 'item')}: {ids}.")

    def _restore(self, *, ids: list[int], since, until, type, **_):
        report = archive_restore(
            ids=ids, since=since, until=until, type=type, progress=self.stdout.write
        )
        if report.already:
            already = ", ".join(map(str, report.already))
            self.stdout.write(f"Already in working memory: {already}.")
        restored = ", ".join(map(str, report.restored)) or "none"
        self.stdout.write(f"Restored {counted(len(report.restored), 'item')}: {restored}.")

    def _list(self, *, since, until, type, like: str | None, **_):
        entries = entries_matching(
            index_read(archive_storage()),
            since=since,
            until=until,
            type=type,
            semantic_hash=semantic_hash(like) if like else None,
        )
        for key, entry in sorted(entries.items(), key=lambda pair: (pair[1]["day"], pair[0])):
            self.stdout.write(
                f"{key}\t{entry['day']}\t{entry['type']}\t{entry['status']}\t"
                f"{entry['file']}:{entry['line'] + 1}"
            )
        self.stdout.write(f"{counted(len(entries), 'archived item')}.")
