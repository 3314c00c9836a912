from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from silentstar.words import counted
from transfer.portable import PortableError, portable_export


class Command(BaseCommand):
    help = (
        "Write the whole memory into DIR (empty or missing) as JSON Lines a person can read "
        "without this software: one file per kind of record, the events' images, and "
        "manifest.json with each file's rows and SHA-256. manage.py import reads it back. "
        "See docs/export.md for every file and field."
    )

    def add_arguments(self, parser):
        parser.add_argument("dir", type=Path, help="The folder to write (empty or missing).")
        parser.add_argument(
            "--for-sharing",
            action="store_true",
            help="Leave out what was taken back or forgotten, and every context snapshot: an "
            "export to give someone, not a copy of the installation (docs/export.md).",
        )

    def handle(self, *args, dir: Path, for_sharing: bool, **options):
        try:
            manifest = portable_export(
                folder=dir, progress=self.stdout.write, for_sharing=for_sharing
            )
        except PortableError as error:
            raise CommandError(f"Export failed: {error}") from None
        rows = sum(entry["rows"] for entry in manifest["files"])
        self.stdout.write(
            self.style.SUCCESS(
                f"Exported {counted(rows, 'row')} and {counted(len(manifest['images']), 'image')} "
                f"to {dir}"
            )
        )
