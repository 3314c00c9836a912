"""``manage.py export_to sillytavern|card PATH``: the fragments as a SillyTavern lorebook, or as
a Character Card V3 with its book (JSON, or PNG when PATH ends in .png); docs/bridges.md."""

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from gem.selectors import ambient_prose_current, identities_current
from transfer.bridges import fragments_exported
from transfer.formats.card import card_dump
from transfer.formats.sillytavern import lorebook_dump

FORMATS = ("sillytavern", "card")


class Command(BaseCommand):
    help = (
        "Write the fragments as a SillyTavern lorebook (World Info JSON) or as a Character Card "
        "V3 with its book: each fragment's key and triggers (and the keys of an older import's "
        "Keys: line) as the entry's keys, its ambient tier as a constant entry, its "
        "recognition and inventory as the content. Read back with import_from, it gives the "
        "same fragments."
    )

    def add_arguments(self, parser):
        parser.add_argument("format", choices=FORMATS)
        parser.add_argument("path", type=Path)

    def handle(self, *args, format, path, **options):
        entries = fragments_exported()
        name = identities_current().default_companion
        if format == "sillytavern":
            data = lorebook_dump(entries, name=name)
        else:
            data = card_dump(
                name=name,
                description=ambient_prose_current(),
                entries=entries,
                png=path.suffix.lower() == ".png",
            )
        try:
            path.write_bytes(data)
        except OSError as error:
            raise CommandError(f"{path}: {error.strerror}") from None
        self.stdout.write(f"Wrote {len(entries)} lorebook entries to {path}.")
