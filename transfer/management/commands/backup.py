from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from transfer.backup import BackupError, backup_create, backups_prune


class Command(BaseCommand):
    help = (
        "Back up the four stores and the uploaded images into a new folder "
        "DIR/silentstar-<UTC time>/, with a manifest of checksums, while the web and the worker "
        "keep running (SQLite's backup API per store file, pg_dump per PostgreSQL database). "
        "Restore it with manage.py restore. See docs/backup.md."
    )

    def add_arguments(self, parser):
        parser.add_argument("dir", type=Path, help="The folder the backup folder is made in.")
        parser.add_argument(
            "--here",
            action="store_true",
            help="Write the backup into DIR itself (empty or missing), not a new folder in it.",
        )
        parser.add_argument(
            "--keep",
            type=int,
            metavar="N",
            help="Afterwards, delete the backups in DIR beyond the N newest (folders "
            "silentstar-* with a manifest; nothing else is touched).",
        )

    def handle(self, *args, dir: Path, here: bool, keep: int | None, **options):
        if keep is not None and (keep < 1 or here):
            raise CommandError("--keep takes a number of backups, 1 or more, and no --here")
        try:
            folder = backup_create(into=dir, here=here, progress=self.stdout.write)
        except BackupError as error:
            raise CommandError(f"Backup failed: {error}") from None
        self.stdout.write(self.style.SUCCESS(f"Backup written to {folder}"))
        if keep is not None:
            for old in backups_prune(into=dir, keep=keep):
                self.stdout.write(f"Deleted the older backup {old}")
