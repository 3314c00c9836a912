"""``manage.py lens WORD …``: the Lens from the terminal, dispatched on its first word.

``lens search "…"``, ``lens query …`` and ``lens eval DATASET.json``; each word has its own
options (``manage.py lens search --help``). Markdown out.
"""

import argparse
import json
from datetime import datetime
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils import timezone

from lens.evaluate import (
    DEFAULT_KS,
    DatasetError,
    dataset_load,
    evaluate,
    evaluate_in_throwaway_stores,
)
from lens.query import QUERY_PARAMETERS, QueryError, memory_query, query_from_params
from lens.search import KINDS, SearchError, search


def _moment(value: str) -> datetime:
    moment = datetime.fromisoformat(value)
    return moment if timezone.is_aware(moment) else timezone.make_aware(moment)


def _search(command: "Command", words: list[str]) -> None:
    parser = command.word_parser("search", "Full-text search over fragments, events and memory.")
    parser.add_argument("query")
    parser.add_argument("--kinds", nargs="+", choices=KINDS, default=list(KINDS))
    parser.add_argument("--since", type=_moment, help="ISO date and time (owner's time zone)")
    parser.add_argument("--until", type=_moment, help="ISO date and time (owner's time zone)")
    parser.add_argument("--actor", help="only events and working memory by this speaker")
    parser.add_argument("--limit", type=int, default=10)
    options = parser.parse_args(words)
    try:
        hits = search(
            options.query,
            kinds=options.kinds,
            limit=options.limit,
            since=options.since,
            until=options.until,
            actor=options.actor,
        )
    except SearchError as error:
        raise CommandError(str(error)) from error
    command.stdout.write(f"# Search: {options.query}\n")
    if not hits:
        command.stdout.write("Nothing found.")
    for rank, hit in enumerate(hits, start=1):
        when = f" · {timezone.localtime(hit.ts):%Y-%m-%d %H:%M}" if hit.ts else ""
        who = f" · {hit.actor}" if hit.actor else ""
        detail = f" · {hit.detail}" if hit.detail else ""
        command.stdout.write(f"{rank}. `{hit.ref}`{when}{who}{detail} · score {hit.score:.3f}")
        for turn in hit.before:
            command.stdout.write(f"   > {turn.actor}: {_one_line(turn.text)}")
        command.stdout.write(f"   {hit.snippet}")
        for turn in hit.after:
            command.stdout.write(f"   > {turn.actor}: {_one_line(turn.text)}")


def _query(command: "Command", words: list[str]) -> None:
    parser = command.word_parser("query", "Mira's memory query over events, memory, fragments.")
    for name, help_text in QUERY_PARAMETERS.items():
        parser.add_argument(f"--{name.replace('_', '-')}", dest=name, help=help_text)
    parser.add_argument("--json", action="store_true", help="print JSON instead of Markdown")
    options = vars(parser.parse_args(words))
    as_json = options.pop("json")
    try:
        results = memory_query(query_from_params({k: v for k, v in options.items() if v}))
    except QueryError as error:
        raise CommandError(str(error)) from error
    if as_json:
        command.stdout.write(json.dumps([entry.as_json() for entry in results], indent=1))
        return
    command.stdout.write(f"# Query: {len(results)} result{'s' if len(results) != 1 else ''}\n")
    for entry in results:
        when = f" · {timezone.localtime(entry.ts):%Y-%m-%d %H:%M}" if entry.ts else ""
        scores = f" · importance {entry.importance:.2f}" if entry.importance is not None else ""
        command.stdout.write(f"- `{entry.ref}` {entry.type}{when}{scores}: {_one_line(entry.text)}")


def _eval(command: "Command", words: list[str]) -> None:
    parser = command.word_parser("eval", "recall@k of search on a conversation dataset.")
    parser.add_argument("dataset", type=Path)
    parser.add_argument("--k", nargs="+", type=int, default=list(DEFAULT_KS))
    parser.add_argument("--json", type=Path, dest="json_file", help="also write the figures here")
    parser.add_argument(
        "--here",
        action="store_true",
        help="evaluate in the configured stores (each conversation rolled back afterwards) "
        "instead of fresh throwaway SQLite stores",
    )
    parser.add_argument("--migrate", action="store_true", help="migrate the stores first")
    options = parser.parse_args(words)
    if any(k < 1 for k in options.k):
        raise CommandError("--k takes whole numbers of at least 1")
    try:
        if options.here:
            if options.migrate:
                command.migrate_all()
            result = evaluate(dataset_load(options.dataset), ks=options.k)
            command.stdout.write(json.dumps(result))
            return
        dataset_load(options.dataset)  # a bad dataset is reported before anything starts
        result = evaluate_in_throwaway_stores(path=options.dataset, ks=options.k)
    except (DatasetError, RuntimeError) as error:
        raise CommandError(str(error)) from error
    ks = [str(k) for k in sorted(set(options.k))]
    command.stdout.write(f"{'category':<14}" + "".join(f"{'@' + k:>8}" for k in ks))
    for category, figures in result["by_category"].items():
        command.stdout.write(f"{category:<14}" + "".join(f"{figures[k]:>8.3f}" for k in ks))
    overall = result["overall"]
    command.stdout.write(f"{'overall':<14}" + "".join(f"{overall[k]:>8.3f}" for k in ks))
    command.stdout.write(f"{result['questions']} questions")
    if options.json_file:
        options.json_file.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")


def _one_line(text: str) -> str:
    return " ".join(text.split())


WORDS = {"search": _search, "query": _query, "eval": _eval}


class Command(BaseCommand):
    help = (
        'The Lens: `lens search "words"` (full-text search), `lens query --contains … '
        "--last-n-days 7 …` (Mira's memory query), `lens eval DATASET.json [--k 5 10 25] "
        "[--json FILE]` (recall@k of search). `lens WORD --help` for each word's options."
    )

    def add_arguments(self, parser):
        parser.add_argument("word", choices=list(WORDS))
        # Everything after the word is the word's own: its options are not the command's.
        parser.add_argument("rest", nargs=argparse.REMAINDER, help="the word's own arguments")

    def handle(self, *args, word, rest, **options):
        WORDS[word](self, rest)

    def word_parser(self, word: str, description: str) -> CommandParser:
        return CommandParser(
            prog=f"manage.py lens {word}",
            description=description,
            called_from_command_line=getattr(self, "_called_from_command_line", False),
        )

    def migrate_all(self) -> None:
        from django.core.management import call_command

        for alias in ("default", "events", "summaries", "snapshots"):
            call_command("migrate", database=alias, verbosity=0)
