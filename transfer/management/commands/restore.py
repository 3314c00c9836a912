from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from transfer.backup import BackupError
from transfer.restore import backup_restore


class Command(BaseCommand):
    help = (
        "Restore a backup made by manage.py backup (DIR is its own folder, silentstar-…) into "
        "this installation. Stop the web and the worker first. Every file's checksum is "
        "checked before anything changes. Refused for a damaged or incomplete backup, a backup "
        "of a newer schema than this code, stores laid out otherwise (another backend, other "
        "shared databases), and an installation that is not empty: one with any events, "
        "working memory, fragments or summaries. A new installation with only its owner "
        "account and schedules counts as empty; they are replaced by the backup's."
    )

    def add_arguments(self, parser):
        parser.add_argument("dir", type=Path, help="The backup's folder (with manifest.json).")

    def handle(self, *args, dir: Path, **options):
        try:
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
