"""``manage.py mira import FILE`` and ``manage.py mira export FILE [--since DATE]``: Mira's JSONL
memory in and out (``transfer.mira``, docs/mira.md). FILE ``-`` is standard input or output."""

import sys
from datetime import datetime

from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from transfer.lock import TransferBusy, one_at_a_time
from transfer.mira import MiraError, mira_export, mira_import, mira_lines


def _since(text: str) -> datetime:
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise CommandError(f"--since: “{text}” is not an ISO date (2026-03-01)") from None
    return moment if timezone.is_aware(moment) else timezone.make_aware(moment)


class Command(BaseCommand):
    help = "Import or export Mira's JSONL memory entries (seed 003)."

    def add_arguments(self, parser):
        actions = parser.add_subparsers(dest="action", required=True)
        read = actions.add_parser("import", help="Import a Mira JSONL file; safe to run twice.")
        read.add_argument("file", help="The JSONL file, or - for standard input.")
        write = actions.add_parser("export", help="Write every event and item as Mira entries.")
        write.add_argument("file", help="The JSONL file to write, or - for standard output.")
        write.add_argument("--since", type=_since, help="Only entries from then (ISO date).")

    def handle(self, *args, action, file, **options):
        if action == "import":
            try:
                with one_at_a_time(what="import"):
                    if file == "-":
                        done = mira_import(sys.stdin)
                    else:
                        with open(file, encoding="utf-8") as lines:
                            done = mira_import(lines)
            except TransferBusy as error:
                raise CommandError(f"{file} refused, nothing imported: {error}") from None
            except OSError as error:
                raise CommandError(f"{file}: {error.strerror}") from None
            except MiraError as error:
                raise CommandError(f"{file} refused, nothing imported:\n{error}") from None
            self.stdout.write(f"Imported {file}: {done}")
            return
        entries = list(mira_export(since=options["since"]))
        if file == "-":
            for line in mira_lines(entries):
                self.stdout.write(line, ending="")
            return
        with open(file, "w", encoding="utf-8") as out:
            out.writelines(mira_lines(entries))
        self.stdout.write(f"Wrote {len(entries)} Mira entries to {file}.")
