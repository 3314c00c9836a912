"""``manage.py search_vectors``: write the semantic search's missing event vectors."""

from django.core.management.base import BaseCommand, CommandError

from lens import semantic
from lens.encoder import EncoderUnavailable


class Command(BaseCommand):
    help = (
        "Write the vector of every event that has none, for the optional semantic search "
        "(SILENTSTAR_SEARCH_SEMANTIC). Run it once after switching the search on over a long "
        "history; afterwards a task after each turn keeps up. Writes nothing else."
    )

    def handle(self, *args, verbosity, **options):
        def progress(done: int, total: int) -> None:
            if verbosity >= 1:
                self.stdout.write(f"vectors {done:,}/{total:,}")

        try:
            written = semantic.vectors_fill(progress=progress)
        except EncoderUnavailable as error:
            raise CommandError(str(error)) from None
        self.stdout.write(f"Wrote {written:,} event vectors.")
