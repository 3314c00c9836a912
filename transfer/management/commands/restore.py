from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from transfer.backup import BackupError
from transfer.restore import backup_restore, stopped_undo


class Command(BaseCommand):
    help = (
        "Restore a backup made by manage.py backup (DIR is its own folder, silentstar-…) into "
        "this installation. Stop the web and the worker first. Every file's checksum and "
        "SQLite's own check of every database file come before anything changes, and a restore "
        "that fails part-way is undone. Refused for a damaged or incomplete backup, a backup "
        "of a newer schema than this code, stores laid out otherwise (another backend, other "
        "shared databases), another restore or import running, and an installation that is "
        "not empty: one with any events, working memory, fragments or summaries. A new "
        "installation with only its owner account and schedules counts as empty; they are "
        "replaced by the backup's. A restore or import that was stopped part-way is undone "
        "first; --undo does only that."
    )
    # The system checks refuse to start on an installation a stopped restore left half-filled;
    # this command is what puts it back.
    requires_system_checks = []

    def add_arguments(self, parser):
        parser.add_argument(
            "dir", type=Path, nargs="?", help="The backup's folder (with manifest.json)."
        )
        parser.add_argument(
            "--undo",
            action="store_true",
            help="Only undo a restore or import that was stopped part-way (killed, or its "
            "machine stopped), putting the installation back as it was before it.",
        )

    def handle(self, *args, dir: Path | None, undo: bool, **options):
        if undo == (dir is not None):
            raise CommandError("Give a backup's folder, or --undo alone")
        try:
            if undo:
                if stopped_undo(progress=self.stdout.write) is None:
                    self.stdout.write("No restore or import was stopped part-way: nothing to undo.")
                return
            restored = backup_restore(folder=dir, progress=self.stdout.write)
        except BackupError as error:
            raise CommandError(f"Restore refused: {error}") from None
        rows = ", ".join(
            f"{n} {key.replace('_', ' ')}" for key, n in restored.manifest["rows"].items()
        )
        self.stdout.write(
            self.style.SUCCESS(f"Restored the backup of {restored.manifest['created']}: {rows}")
        )
        if restored.behind:
            self.stdout.write(
                f"The backup's schema is older than this code ({', '.join(restored.behind)}): "
                "run manage.py migrate for each store (deploy/release does)."
            )
