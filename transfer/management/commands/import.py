from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from silentstar.words import counted
from transfer.backup import BackupError
from transfer.lock import one_at_a_time
from transfer.portable import PortableError, portable_import
from transfer.undo import stopped_run_undo, undone_on_failure


class Command(BaseCommand):
    help = (
        "Import a folder written by manage.py export into this installation, ids kept. Every "
        "file, line and field is checked before anything is written. Refused for an "
        "installation that is not empty: one with any events, working memory, fragments or "
        "summaries (a new one with its owner account counts as empty; its default identities, "
        "wake texts and Mirror prompts are replaced by the export's). An import that fails or is "
        "stopped part-way is undone: at once, or by the next import or restore (or manage.py "
        "restore --undo). Refused while another import or restore runs. See docs/export.md."
    )
    # The system checks refuse to start on an installation a stopped import left half-filled;
    # this command puts it back before importing.
    requires_system_checks = []

    def add_arguments(self, parser):
        parser.add_argument("dir", type=Path, help="The export's folder (with manifest.json).")
        parser.add_argument(
            "--unknown-authors-blank",
            action="store_true",
            help="Save the versions of ambient prose and wake texts whose author has no account "
            "here without an author, instead of refusing.",
        )

    def handle(self, *args, dir: Path, unknown_authors_blank: bool, **options):
        try:
            with one_at_a_time(what="import"):
                stopped_run_undo(progress=self.stdout.write)
                with undone_on_failure(what="import", source=dir, progress=self.stdout.write):
                    imported = portable_import(
                        folder=dir,
                        unknown_authors_blank=unknown_authors_blank,
                        progress=self.stdout.write,
                    )
        except (BackupError, PortableError) as error:
            raise CommandError(f"Import refused: {error}") from None
        for name, count in imported.replaced.items():
            self.stdout.write(f"Replaced this installation's {counted(count, 'row')} of {name}")
        self.stdout.write(
            self.style.SUCCESS(
                f"Imported {counted(sum(imported.rows.values()), 'row')} and "
                f"{counted(imported.images, 'image')} "
                f"from {dir}"
            )
        )
        self.stdout.write(
            "With the semantic search in use, manage.py search_vectors writes the events' vectors."
        )
