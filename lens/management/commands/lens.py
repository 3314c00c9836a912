"""``manage.py lens``: the Lens from the terminal, Markdown out.

The first word picks what to do (``WORDS``: word → handler); any other first word starts a
list of fragment keys. Handlers take the remaining words and the options and return the
Markdown to print; the work itself is in ``lens/extract.py`` and ``lens/draft.py``.
"""

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from lens.draft import DraftError, draft_diff, draft_parse
from lens.extract import (
    DEPTH_DEFAULT,
    SUMMARIES_DEFAULT,
    LensError,
    fragment_markdown,
    intersection_markdown,
    summaries_markdown,
    working_memory_markdown,
)


def diff(words: list[str], options: dict) -> str:
    if len(words) != 1:
        raise CommandError("Usage: manage.py lens diff DRAFT.md")
    path = Path(words[0])
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise CommandError(f"Cannot read the draft {path}: {error}") from None
    try:
        return draft_diff(draft_parse(text)).as_text()
    except DraftError as error:
        raise CommandError(f"{path}: {error}") from None


def keys(words: list[str], options: dict) -> str:
    words = [*words, *options["key"]]
    parts = []
    if len(words) == 1:
        parts.append(fragment_markdown(words[0]))
    elif words:
        parts.append(intersection_markdown(words, depth=options["depth"]))
    if options["wm"]:
        parts.append(working_memory_markdown())
    if options["summaries"]:
        parts.append(summaries_markdown(limit=options["limit"]))
    if not parts:
        raise CommandError("Name a fragment key (or several), or ask for --wm or --summaries.")
    return "\n".join(parts)


WORDS = {
    "diff": diff,
}


class Command(BaseCommand):
    help = (
        "Read the Gem: `lens KEY` (a fragment), `lens K1 K2 …` (what connects them), "
        "`--wm`, `--summaries`; `lens diff DRAFT.md` (what a draft would change). Writes nothing."
    )

    def add_arguments(self, parser):
        parser.add_argument("words", nargs="*", help="A word from WORDS, or fragment keys.")
        parser.add_argument(
            "--key",
            action="append",
            default=[],
            help="A fragment key, even one spelt like a word (lens --key diff).",
        )
        parser.add_argument("--wm", action="store_true", help="Working memory with live scores.")
        parser.add_argument(
            "--summaries", action="store_true", help="The Mirror's summaries, newest first."
        )
        parser.add_argument(
            "--depth",
            type=int,
            default=DEPTH_DEFAULT,
            help=f"Longest path between keys, in edges (default {DEPTH_DEFAULT}).",
        )
        parser.add_argument(
            "--limit",
            type=int,
            default=SUMMARIES_DEFAULT,
            help=f"How many summaries (default {SUMMARIES_DEFAULT}).",
        )

    def handle(self, *args, words, **options):
        handler, rest = (
            (WORDS[words[0]], words[1:]) if words and words[0] in WORDS else (keys, words)
        )
        try:
            self.stdout.write(handler(rest, options), ending="")
        except LensError as error:
            raise CommandError(str(error)) from None
