"""``manage.py lens``: the Lens from the terminal, Markdown out.

The first word picks what to do (``WORDS``: word → handler); any other first word starts a
list of fragment keys. Everything after the word is the word's own (``manage.py lens search
--help``): ``lens diff DRAFT.md``, ``lens search "…"``, ``lens query …``; ``lens KEY [KEY …]
[--wm] [--summaries]``. The work itself is in ``lens/extract.py``, ``gem/draft.py``,
``lens/search.py`` and ``lens/query.py``.
"""

import argparse
import json
from datetime import datetime
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils import timezone

from events.selectors import source_events
from gem.draft import DraftError, draft_check, draft_diff, draft_parse
from lens.display import hits_display
from lens.extract import (
    DEPTH_DEFAULT,
    SUMMARIES_DEFAULT,
    LensError,
    fragment_markdown,
    intersection_markdown,
    summaries_markdown,
    working_memory_markdown,
)
from lens.query import QUERY_PARAMETERS, QueryError, memory_query, query_from_params
from lens.search import DEFAULT_KINDS, KINDS, SearchError, search
from silentstar.words import counted

KEYS_OPTIONS = ("key", "wm", "summaries", "depth", "limit")


def _keys_options(parser: argparse.ArgumentParser) -> None:
    """The options of the keys form; the command has them too, so ``lens --wm`` works alone."""
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


def _keys(command: "Command", words: list[str], options: dict) -> None:
    parser = command.word_parser("KEY", "A fragment, or what connects several keys.")
    parser.add_argument("keys", nargs="*")
    _keys_options(parser)
    # Options given before the first key are the command's; those after it override them.
    parser.set_defaults(**{name: options[name] for name in KEYS_OPTIONS})
    asked = parser.parse_args(words)
    keys = [*asked.keys, *asked.key]
    parts = []
    if len(keys) == 1:
        parts.append(fragment_markdown(keys[0]))
    elif keys:
        parts.append(intersection_markdown(keys, depth=asked.depth))
    if asked.wm:
        parts.append(working_memory_markdown())
    if asked.summaries:
        parts.append(summaries_markdown(limit=asked.limit))
    if not parts:
        raise CommandError("Name a fragment key (or several), or ask for --wm or --summaries.")
    command.stdout.write("\n".join(parts), ending="")


def _diff(command: "Command", words: list[str], options: dict) -> None:
    if len(words) != 1:
        raise CommandError("Usage: manage.py lens diff DRAFT.md")
    path = Path(words[0])
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise CommandError(f"Cannot read the draft {path}: {error}") from None
    try:
        draft = draft_parse(text)
        command.stdout.write(draft_diff(draft, events_found=source_events).as_text(), ending="")
        check = draft_check(draft)
        if check.moved():
            command.stdout.write("\n" + check.as_text())
        if check.unchecked:
            command.stdout.write(
                f"\nIt does not say what it was written against for {', '.join(check.unchecked)}, "
                "so it could not be checked against changes made since."
            )
    except DraftError as error:
        raise CommandError(f"{path}: {error}") from None


def _moment(value: str) -> datetime:
    moment = datetime.fromisoformat(value)
    return moment if timezone.is_aware(moment) else timezone.make_aware(moment)


def _search(command: "Command", words: list[str], options: dict) -> None:
    parser = command.word_parser("search", "Full-text search over fragments, events and memory.")
    parser.add_argument("query")
    parser.add_argument("--kinds", nargs="+", choices=KINDS, default=list(DEFAULT_KINDS))
    parser.add_argument("--since", type=_moment, help="ISO date and time (owner's time zone)")
    parser.add_argument("--until", type=_moment, help="ISO date and time (owner's time zone)")
    parser.add_argument("--actor", help="only events and working memory by this speaker")
    parser.add_argument("--limit", type=int, default=10)
    found = parser.parse_args(words)
    try:
        hits = search(
            found.query,
            kinds=found.kinds,
            limit=found.limit,
            since=found.since,
            until=found.until,
            actor=found.actor,
        )
    except SearchError as error:
        raise CommandError(str(error)) from error
    command.stdout.write(f"# Search: {found.query}\n")
    if not hits:
        command.stdout.write("Nothing found.")
    for rank, shown in enumerate(hits_display(hits), start=1):
        hit = shown.hit
        when = f" · {timezone.localtime(hit.ts):%Y-%m-%d %H:%M}" if hit.ts else ""
        who = f" · {hit.actor}" if hit.actor else ""
        detail = f" · {hit.detail}" if hit.detail else ""
        tier = f" · {hit.tier}" if hit.tier else ""
        beside = " · beside a match" if hit.beside else ""
        command.stdout.write(
            f"{rank}. `{hit.ref}`{tier}{when}{who}{detail} · score {hit.score:.3f}{beside}"
        )
        for turn in shown.before:
            command.stdout.write(f"   > {turn.actor}: {turn.text}")
        command.stdout.write(f"   {shown.passage}")
        for turn in shown.after:
            command.stdout.write(f"   > {turn.actor}: {turn.text}")


def _query(command: "Command", words: list[str], options: dict) -> None:
    parser = command.word_parser("query", "Mira's memory query over events, memory, fragments.")
    for name, help_text in QUERY_PARAMETERS.items():
        parser.add_argument(f"--{name.replace('_', '-')}", dest=name, help=help_text)
    parser.add_argument("--json", action="store_true", help="print JSON instead of Markdown")
    asked = vars(parser.parse_args(words))
    as_json = asked.pop("json")
    try:
        results = memory_query(query_from_params({k: v for k, v in asked.items() if v}))
    except QueryError as error:
        raise CommandError(str(error)) from error
    if as_json:
        command.stdout.write(json.dumps([entry.as_json() for entry in results], indent=1))
        return
    command.stdout.write(f"# Query: {counted(len(results), 'result')}\n")
    for entry in results:
        when = f" · {timezone.localtime(entry.ts):%Y-%m-%d %H:%M}" if entry.ts else ""
        scores = f" · importance {entry.importance:.2f}" if entry.importance is not None else ""
        command.stdout.write(f"- `{entry.ref}` {entry.type}{when}{scores}: {_one_line(entry.text)}")


def _one_line(text: str) -> str:
    return " ".join(text.split())


WORDS = {"diff": _diff, "search": _search, "query": _query}


class Command(BaseCommand):
    help = (
        "Read the Gem; writes nothing. `lens KEY` (a fragment), `lens K1 K2 …` (what connects "
        "them), `--wm`, `--summaries`; `lens diff DRAFT.md` (what a draft would change); "
        '`lens search "words"` (full-text search); `lens query --contains … --last-n-days 7 …` '
        "(Mira's memory query). `lens WORD --help` for each word's options."
    )

    def add_arguments(self, parser):
        _keys_options(parser)
        # Everything after the first word is the word's own: its options are not the command's.
        parser.add_argument(
            "words", nargs=argparse.REMAINDER, help="A word from WORDS, or fragment keys."
        )

    def handle(self, *args, words, **options):
        handler, rest = (
            (WORDS[words[0]], words[1:]) if words and words[0] in WORDS else (_keys, words)
        )
        try:
            handler(self, rest, options)
        except LensError as error:
            raise CommandError(str(error)) from None

    def word_parser(self, word: str, description: str) -> CommandParser:
        return CommandParser(
            prog=f"manage.py lens {word}",
            description=description,
            called_from_command_line=getattr(self, "_called_from_command_line", False),
        )
