from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from transfer.backup import BackupError, backup_create, backup_verify, backups_prune


class Command(BaseCommand):
    help = (
        "Back up the four stores and the uploaded images into a new folder "
        "DIR/silentstar-<UTC time>/, with a manifest of checksums, while the web and the worker "
        "keep running (SQLite's backup API per store file, pg_dump per PostgreSQL database), "
        "each copy checked by SQLite or pg_restore. Backups in DIR whose run stopped part-way "
        "are removed first. With --verify, check the backup DIR instead. Restore it with "
        "manage.py restore. See docs/backup.md."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "dir",
            type=Path,
            help="The folder the backup folder is made in (with --verify, the backup's own).",
        )
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
        parser.add_argument(
            "--verify",
            action="store_true",
            help="Check the backup DIR without restoring it: its manifest, every file's "
            "checksum, no symbolic links, and each database file read by SQLite or pg_restore.",
        )

    def handle(self, *args, dir: Path, here: bool, keep: int | None, verify: bool, **options):
        if keep is not None and (keep < 1 or here):
            raise CommandError("--keep takes a number of backups, 1 or more, and no --here")
        if verify:
            if here or keep is not None:
                raise CommandError("--verify checks a backup and takes no --here or --keep")
            self._verify(dir)
            return
        try:
            folder = backup_create(into=dir, here=here, progress=self.stdout.write)
        except BackupError as error:
            raise CommandError(f"Backup failed: {error}") from None
        self.stdout.write(self.style.SUCCESS(f"Backup written to {folder}"))
        if keep is not None:
            try:
                deleted = backups_prune(into=dir, keep=keep)
            except OSError as error:
                raise CommandError(
                    f"Deleting the older backups failed: cannot delete {error.filename}: "
                    f"{error.strerror} (the new backup {folder} is whole)"
                ) from None
            for old in deleted:
                self.stdout.write(f"Deleted the older backup {old}")

    def _verify(self, folder: Path) -> None:
        try:
            manifest = backup_verify(folder)
        except BackupError as error:
            raise CommandError(f"{folder} is not a sound backup: {error}") from None
        except OSError as error:
            raise CommandError(
                f"{folder} cannot be checked: cannot read {error.filename}: {error.strerror}"
            ) from None
        rows = ", ".join(
            f"{key.replace('_', ' ')}: {count}" for key, count in manifest["rows"].items()
        )
        self.stdout.write(
            self.style.SUCCESS(f"{folder} is a sound backup, made {manifest['created']} ({rows})")
        )
