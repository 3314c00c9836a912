"""The commands of ``python -m bench WHAT``: one function for each, given its parsed arguments.

``turns``, ``search``, ``mirror``, ``queue`` and ``continuity`` measure in a new process (this
command again, with ``--inside``) on throwaway SQLite stores, offline, and print what it
reports; ``firstchar`` runs the browser benchmark in a pytest process; ``load`` serves throwaway
stores with gunicorn and the worker to a locust swarm (``bench/load.py``); ``faults`` injects
faults into turns a real worker answers against the fake Messages API (``bench/faults.py``);
``legacy`` imports a synthetic legacy database in a new process on throwaway stores
(``bench/legacy.py``); ``continuity`` lives a long conversation and measures the context of
each return (``bench/continuity.py``); ``cache`` replays a real conversation through the turn
pipeline against the fake API's prompt cache, in a new process for each cache minimum
(``bench/cache.py``); ``eval`` is the retrieval evaluation harness
(``bench/evaluate.py``) and ``generate`` writes its synthetic datasets (``bench/generate.py``).
"""

import argparse
import importlib.util
import io
import itertools
import json
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from contextlib import ExitStack, contextmanager
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from django.conf import settings
from django.core.management import call_command
from django.test import override_settings

from bench.answerable import conversation_answerable
from bench.answerable import figures_lines as answerable_lines
from bench.bridges import (
    LOREBOOKS,
    bridges_measure,
    lorebook_said,
    lorebooks_measure,
    sillytavern_chat_write,
)
from bench.cache import cache_replay, exchanges_of, model_price, shares
from bench.cache import figures_lines as cache_figures_lines
from bench.continuity import conversation_measure, figures_lines
from bench.evaluate import (
    DEFAULT_KS,
    DatasetError,
    dataset_load,
    evaluate,
    evaluate_in_throwaway_stores,
)
from bench.faults import KINDS, ClusterStopped, faults_run
from bench.firstchar import first_char_measure
from bench.fuzz import fuzz_run
from bench.generate import DATASETS, dataset_write
from bench.legacy import GEM_ROWS, legacy_import_measure, legacy_pair_write
from bench.load import load_measure, port_wait, spare_port
from bench.mirror import mirror_measure
from bench.queue import queue_pickup_measure
from bench.search import search_measure
from bench.stores import StoresMissing, stores_start
from bench.turns import TurnRunner, overhead_figures, synthetic_gem_build
from heart.warm import cache_keep_warm

SIZES = {"10k": 10_000, "1M": 1_000_000}
STORE_URLS = [
    "DATABASE_URL",
    "EVENTS_DATABASE_URL",
    "SUMMARIES_DATABASE_URL",
    "SNAPSHOTS_DATABASE_URL",
]
TURNS_AT_ONCE = 10  # turns a size runs before the other takes its turn
FAULTS_DATABASE = "silentstar_faults_"  # the start of the name of the faults run's databases


class BenchError(Exception):
    """A command that cannot go on: ``main`` prints the message and exits with status 1."""


def main(argv: list[str] | None = None) -> int:
    asked = parser().parse_args(argv)
    try:
        asked.run(asked)
    except BenchError as error:
        print(f"python -m bench {asked.what}: {error}", file=sys.stderr)
        return 1
    return 0


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(
        prog="python -m bench",
        description="Benchmarks and the retrieval evaluation harness. "
        "`python -m bench WHAT --help` for each one's options.",
    )
    words = top.add_subparsers(dest="what", required=True, metavar="WHAT")

    turns = words.add_parser(
        "turns",
        help="the turn's own overhead on synthetic Gems",
        description="Build synthetic Gems (10k and 1M events, 5k fragments, 20k edges, 100k "
        "working-memory rows of which 1k active) in throwaway SQLite stores, run turns with the "
        "offline companion and print the turn's own overhead (all but the model).",
    )
    _sizes_option(turns)
    turns.add_argument("--turns", type=int, default=200, help="turns to run at each size")
    _inside_options(turns)
    turns.set_defaults(run=_turns)

    queue = words.add_parser(
        "queue",
        help="django-q2 pickup on a running cluster",
        description="Time from enqueueing a task to its result stored, on a django-q2 cluster "
        "started on throwaway stores.",
    )
    queue.add_argument("--turns", type=int, default=200, help="tasks to enqueue")
    _inside_options(queue, size=False)
    queue.set_defaults(run=_queue)

    firstchar = words.add_parser(
        "firstchar",
        help="first streamed token to first visible character, in Chromium",
        description="In Chromium, the time from the fake Messages API's first streamed token to "
        "the first visible character of the reply (needs the development requirements and "
        "Chromium).",
    )
    firstchar.add_argument("--runs", type=int, default=10, help="replies to time")
    firstchar.set_defaults(run=_first_char)

    mirror = words.add_parser(
        "mirror",
        help="the Mirror over a synthetic log against the fake Messages API",
        description="Compress a synthetic log with the Mirror against the fake Messages API: "
        "passes, tokens and wall time.",
    )
    mirror.add_argument("--mirror-turns", type=int, default=1000, help="turns in the log")
    _inside_options(mirror, size=False)
    mirror.set_defaults(run=_mirror)

    search = words.add_parser(
        "search",
        help="lens search next to the raw FTS5 query",
        description="On synthetic Gems, lens search p50/p95 next to the raw FTS5 query.",
    )
    _sizes_option(search)
    search.add_argument("--queries", type=int, default=50, help="queries to time")
    search.add_argument(
        "--semantic",
        action="store_true",
        help="also time the semantic ranking, vectors read each time and held "
        "(needs the semantic search's requirements; no model is run)",
    )
    _inside_options(search)
    search.set_defaults(run=_search)

    evaluation = words.add_parser(
        "eval",
        help="recall@k of search on a conversation dataset",
        description="recall@k of search on a conversation dataset, beside plain BM25 over "
        "single turns.",
    )
    evaluation.add_argument(
        "dataset", type=Path, metavar="DATASET", help="a dataset's JSON file (see generate)"
    )
    evaluation.add_argument(
        "--k", nargs="+", type=int, default=list(DEFAULT_KS), help="the k of recall@k"
    )
    evaluation.add_argument(
        "--json", type=Path, dest="json_file", metavar="FILE", help="also write the figures here"
    )
    evaluation.add_argument(
        "--here",
        action="store_true",
        help="evaluate in the configured stores (each conversation rolled back afterwards) "
        "instead of fresh throwaway SQLite stores",
    )
    evaluation.add_argument("--migrate", action="store_true", help="migrate the stores first")
    evaluation.add_argument(
        "--semantic",
        choices=("on", "off"),
        help="with or without the optional semantic search (default: SILENTSTAR_SEARCH_SEMANTIC;"
        " not with --here, which uses the configured setting)",
    )
    evaluation.set_defaults(run=_eval)

    generate = words.add_parser(
        "generate",
        help="write the synthetic evaluation datasets",
        description="Write the synthetic evaluation datasets, each from its own seed.",
    )
    generate.add_argument(
        "names",
        nargs="*",
        metavar="NAME",
        help=f"datasets to write: {', '.join(DATASETS)} (default: all)",
    )
    generate.add_argument(
        "--out",
        type=Path,
        default=settings.BASE_DIR / "data" / "eval",
        help="the folder to write them to (default: data/eval/, which git ignores)",
    )
    generate.set_defaults(run=_generate)

    fuzz = words.add_parser(
        "fuzz",
        help="the tag parser and ingest on generated tag soup",
        description="Generated messages (tags of every kind, broken and nested tags, calls, "
        "Unicode, NUL, CRLF) through the tag parser, one in --ingest-every also through ingest "
        "into throwaway SQLite stores: exceptions and characters unaccounted for (goal: 0), and "
        "the rate. Exits with status 1 when it finds any.",
    )
    fuzz.add_argument("--inputs", type=int, default=1_000_000, help="messages to generate")
    fuzz.add_argument(
        "--ingest-every",
        type=int,
        default=100,
        metavar="N",
        help="also ingest one message in N (0: none; default 100)",
    )
    fuzz.add_argument("--seed", type=int, default=0, help="the generator's seed")
    _inside_options(fuzz, size=False)
    fuzz.set_defaults(run=_fuzz)

    load = words.add_parser(
        "load",
        help="the site under gunicorn and its worker, with simulated people chatting",
        description="Serve throwaway stores with gunicorn and the worker, offline, and have "
        "--users simulated people (locust) sign in, read the chat page, poll the worker's "
        "status and send messages for --seconds: throughput, p50/p99 per request kind, errors, "
        "turns sent and answered, and the machine's load. Needs gunicorn and locust "
        "(requirements-dev.txt).",
    )
    load.add_argument("--seconds", type=int, default=60, help="how long the people chat")
    load.add_argument("--users", type=int, default=10, help="people chatting at once")
    load.add_argument(
        "--backend",
        choices=("sqlite", "postgresql"),
        default="sqlite",
        help="SQLite stores, or a throwaway PostgreSQL (scripts/postgres) with the Redis broker",
    )
    load.add_argument(
        "--workers", type=int, help="gunicorn workers (default: 1 on SQLite, 3 on PostgreSQL)"
    )
    load.add_argument("--inside", action="store_true", help=argparse.SUPPRESS)
    load.set_defaults(run=_load)

    faults = words.add_parser(
        "faults",
        help="faults injected into turns answered by a real worker: what was lost or doubled",
        description="Throwaway stores, a real worker (manage.py qcluster) and the fake "
        "Messages API; messages sent through the chat page's endpoint, each meeting one fault, "
        "and restores and imports of the installation killed part-way "
        f"({', '.join(KINDS)}). Prints the faults by kind, events lost, duplicated, turns "
        "stuck, messages refused (goal: 0 each) and the longest time to recover; exits with "
        "status 1 if any is not 0 or a fault did not happen. Linux only (it reads /proc).",
    )
    faults.add_argument("--faults", type=int, default=len(KINDS) * 16, help="faults to inject")
    faults.add_argument("--seed", type=int, default=0, help="the order of the kinds")
    faults.add_argument(
        "--backend",
        choices=("sqlite", "postgresql"),
        default="sqlite",
        help="SQLite stores, or databases of the run's own on the PostgreSQL server of "
        "DATABASE_URL (scripts/postgres makes a throwaway one), dropped afterwards",
    )
    faults.add_argument(
        "--redis",
        action="store_true",
        help="the Redis broker, on a redis-server of the run's own (needs redis-server)",
    )
    faults.add_argument(
        "--workers",
        type=int,
        default=settings.Q_CLUSTER["workers"],
        help="the worker's processes (SILENTSTAR_Q_WORKERS; default: %(default)s)",
    )
    faults.add_argument(
        "--json", type=Path, dest="json_file", metavar="FILE", help="also write the figures here"
    )
    _inside_options(faults, size=False)
    faults.set_defaults(run=_faults)

    legacy = words.add_parser(
        "legacy",
        help="manage.py import_silentstar on a synthetic legacy v5 pair",
        description="Write a synthetic legacy Silentstar database of schema v5 (an events file "
        f"of --events events with their tags; a Gem of {GEM_ROWS['fragments']:,} fragments, "
        f"{GEM_ROWS['edges']:,} edges and {GEM_ROWS['working_memory']:,} working-memory items) "
        "and import it into throwaway SQLite stores as manage.py import_silentstar does, then "
        "once more: the time, rows per second and the import process's peak memory.",
    )
    legacy.add_argument("--events", type=int, default=1_000_000, help="events in the pair")
    legacy.add_argument("--pair", type=Path, help=argparse.SUPPRESS)
    _inside_options(legacy, size=False)
    legacy.set_defaults(run=_legacy)

    bridges = words.add_parser(
        "bridges",
        help="manage.py import_from sillytavern on a long synthetic chat",
        description="Write a SillyTavern chat of --messages messages (every reply with three "
        "swipes) and import it into throwaway SQLite stores as manage.py import_from does, then "
        "once more: messages per second, the importing process's peak memory, the second run's "
        "time, and what the preview says compressing it would cost.",
    )
    bridges.add_argument("--messages", type=int, default=100_000, help="messages in the chat")
    bridges.add_argument(
        "--lorebooks",
        choices=["full", "none"],
        default="full",
        help="also plan a 2 MB lorebook of 1,000 entries and one of 100,000 small entries "
        "(full, the default), or not (none)",
    )
    bridges.add_argument("--chat", type=Path, help=argparse.SUPPRESS)
    _inside_options(bridges, size=False)
    bridges.set_defaults(run=_bridges)

    continuity = words.add_parser(
        "continuity",
        help="what the context of a returning turn keeps of a long real conversation",
        description="Write each conversation of a dataset into throwaway SQLite stores as it "
        "happens, offline, the Mirror running as its schedule would; at the first turn of every "
        "session after the first, assemble the context the Heart would build and count the "
        "person's messages within its reach that it leaves out (holes), the evidence turns of "
        "older questions it still holds, and how far back its summaries reach.",
    )
    _conversations_options(continuity)
    continuity.set_defaults(run=_continuity)

    answerable = words.add_parser(
        "answerable",
        help="how many questions about a long real conversation its context could answer",
        description="Live each conversation of a dataset into throwaway SQLite stores as "
        "continuity does; then put each question as the person's message, at the end of the "
        "conversation and at the first turn after its evidence, and count the questions whose "
        "evidence turns are all in the context, beside a FIFO of the same size and the project "
        "without finding.",
    )
    _conversations_options(answerable)
    answerable.set_defaults(run=_answerable)

    cache = words.add_parser(
        "cache",
        help="how much of the Heart's input Claude's prompt cache holds over a real conversation",
        description="Replay turns of a real conversation through the real turn pipeline and the "
        "real SDK against the fake Messages API with the prompt cache's rules, on a simulated "
        "clock (messages 1-4 minutes apart, a few pauses of 10-90 minutes), the Mirror running "
        "offline when its trigger fires, once for each cache minimum; print the share of the "
        "Heart's input tokens read from the cache and written to it, the input tokens per turn "
        "and the cost per turn at the Heart model's prices, with the cache and without.",
    )
    _real_dataset_argument(cache)
    cache.add_argument("--turns", type=int, default=200, help="turns to replay (default: 200)")
    cache.add_argument(
        "--conversation", metavar="ID", help="the conversation to replay (default: the first)"
    )
    cache.add_argument(
        "--minimums",
        nargs="+",
        type=int,
        default=[512, 1024, 4096],
        metavar="TOKENS",
        help="the cache minimums to measure, one replay each (default: 512 1024 4096)",
    )
    cache.add_argument(
        "--seed", type=int, default=0, help="the times, pauses and tagged lines (default: 0)"
    )
    cache.add_argument(
        "--json", type=Path, dest="json_file", metavar="FILE", help="also write the figures here"
    )
    cache.add_argument(
        "--keep-warm",
        choices=["off", "on", "both"],
        default="both",
        help="replay with SILENTSTAR_CACHE_KEEP_WARM off, on, or each (default: both)",
    )
    cache.add_argument("--minimum", type=int, help=argparse.SUPPRESS)
    cache.add_argument("--warm", action="store_true", help=argparse.SUPPRESS)
    _inside_options(cache, size=False)
    cache.set_defaults(run=_cache)
    return top


def _real_dataset_argument(parser: argparse.ArgumentParser) -> None:
    """DATASET, by default the real conversations beside the project (never copied into it)."""
    parser.add_argument(
        "dataset",
        type=Path,
        nargs="?",
        default=settings.BASE_DIR.parent / "shared" / "bench" / "locomo-dev.json",
        metavar="DATASET",
        help="a dataset in the evaluation harness's format "
        "(default: ../shared/bench/locomo-dev.json)",
    )


def _conversations_options(parser: argparse.ArgumentParser) -> None:
    """The dataset, how many of its conversations, how often the Mirror runs, and the run in
    throwaway stores: what a command living conversations (``_conversations_lived``) reads."""
    _real_dataset_argument(parser)
    parser.add_argument(
        "--conversations",
        type=int,
        metavar="N",
        help="measure only the first N conversations (default: all)",
    )
    parser.add_argument(
        "--mirror-every", type=int, default=10, metavar="N", help="run the Mirror every N turns"
    )
    parser.add_argument("--conversation", help=argparse.SUPPRESS)
    _inside_options(parser, size=False)


def _sizes_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--sizes", nargs="+", choices=list(SIZES), default=list(SIZES))


def _inside_options(parser: argparse.ArgumentParser, *, size: bool = True) -> None:
    """The run in throwaway stores that the command starts; not for people."""
    parser.add_argument("--inside", action="store_true", help=argparse.SUPPRESS)
    if size:
        parser.add_argument("--size", type=int, help=argparse.SUPPRESS)


def _note(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


# --- turns -------------------------------------------------------------------------------------


def _turns(asked: argparse.Namespace) -> None:
    if asked.inside:
        _turns_here(events=asked.size)
        return
    results = _turns_interleaved(sizes=asked.sizes, turns=asked.turns)
    print(
        f"\n{'size':>5} {'events':>10} {'build s':>8} {'p50 ms':>8} {'p95 ms':>8} "
        f"{'found':>6} {'passages':>9}"
    )
    for label, result in results.items():
        print(
            f"{label:>5} {result['events']:>10,} {result['build_s']:>8.1f} "
            f"{result['p50_ms']:>8.1f} {result['p95_ms']:>8.1f} "
            f"{result['found_share']:>6.0%} {result['found_mean']:>9.1f}"
        )
    print(
        "found: the turns whose context found old conversation for their message; passages: "
        "found on average"
    )
    if {"10k", "1M"} <= results.keys():
        ratio = results["1M"]["p50_ms"] / results["10k"]["p50_ms"]
        print(
            f"p50 ratio 1M / 10k: {ratio:.2f} ({asked.turns} turns each, {TURNS_AT_ONCE} at a "
            "time by turns)"
        )


def _turns_interleaved(*, sizes: list[str], turns: int) -> dict[str, dict]:
    """Each size's Gem is built in a process of its own (one after the other); then the
    processes take turns, ``TURNS_AT_ONCE`` at a time, so a load on the machine that comes
    and goes falls on every size alike and the ratio stays fair."""
    with ExitStack() as stack:
        runs = {}
        for label in sizes:
            _note(f"[{label}] building a synthetic Gem of {SIZES[label]:,} events...")
            data_dir = stack.enter_context(tempfile.TemporaryDirectory(prefix="silentstar-bench-"))
            runs[label] = stack.enter_context(_TurnsInside(events=SIZES[label], data_dir=data_dir))
        overheads: dict[str, list[float]] = {label: [] for label in sizes}
        found: dict[str, list[int]] = {label: [] for label in sizes}
        for first in range(0, turns, TURNS_AT_ONCE):
            batch = min(TURNS_AT_ONCE, turns - first)
            for label, run in runs.items():
                answer = run.turns(batch)
                overheads[label] += answer["overheads"]
                found[label] += answer["found"]
            if (first + batch) % 50 == 0 or first + batch == turns:
                _note(f"  turns {first + batch}/{turns} at each size")
        return {
            label: {**run.built, **overhead_figures(overheads[label], found[label])}
            for label, run in runs.items()
        }


def _turns_here(*, events: int) -> None:
    """Inside: build, say so, then run as many turns as each line of stdin asks for."""
    _migrate_throwaway_stores()
    began = time.perf_counter()
    fragments = 5_000
    synthetic_gem_build(
        events=events,
        fragments=fragments,
        edges=20_000,
        working_memory=100_000,
        active=1_000,
        progress=lambda line: _note(f"  {line}"),
    )
    print(json.dumps({"events": events, "build_s": time.perf_counter() - began}), flush=True)
    runner = TurnRunner(fragments=fragments)
    for line in sys.stdin:
        overheads = runner.run(int(line))
        answer = {"overheads": overheads, "found": runner.found[-len(overheads) :]}
        print(json.dumps(answer), flush=True)


class _TurnsInside:
    """``turns --inside`` in a process of its own on throwaway stores, asked for turns."""

    def __init__(self, *, events: int, data_dir: str) -> None:
        self.process = subprocess.Popen(
            _inside_command(["turns", "--size", str(events)]),
            cwd=settings.BASE_DIR,
            env=_inside_env(data_dir),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        self.built = self._answer()

    def __enter__(self) -> "_TurnsInside":
        return self

    def __exit__(self, *exc_info) -> None:
        self.process.stdin.close()
        self.process.wait()

    def turns(self, count: int) -> dict[str, list]:
        self.process.stdin.write(f"{count}\n")
        self.process.stdin.flush()
        return self._answer()

    def _answer(self):
        line = self.process.stdout.readline()
        if not line:
            self.process.kill()
            raise BenchError(f"the benchmark stopped (exit status {self.process.wait()})")
        return json.loads(line)


# --- search ------------------------------------------------------------------------------------


def _search(asked: argparse.Namespace) -> None:
    """lens.search.search next to the raw FTS5 query on the same index (bench/search.py)."""
    if asked.inside:
        _migrate_throwaway_stores()
        result = search_measure(
            events=asked.size,
            queries=asked.queries,
            progress=lambda line: _note(f"  {line}"),
            semantic=asked.semantic,
        )
        print(json.dumps(result))
        return
    print(
        f"{'size':>5} {'kinds':>7} {'clock':>5} {'raw p50':>8} {'p95':>7} {'search p50':>11} "
        f"{'p95':>7} {'ratio p50':>9}  timed (ms; cpu: this process's processor time)"
    )
    for label in asked.sizes:
        _note(f"[{label}] building a synthetic Gem of {SIZES[label]:,} events...")
        result = _run_inside(
            ["search", "--size", str(SIZES[label]), "--queries", str(asked.queries)]
            + (["--semantic"] if asked.semantic else [])
        )
        for kinds in ("event", "all"):
            raw = result[f"{kinds}_raw"]
            for search, name in (("search", "search"), ("read", "search, every passage read")):
                found = result[f"{kinds}_{search}"]
                for clock, key in (("wall", ""), ("cpu", "cpu_")):
                    p50, p95 = f"{key}p50_ms", f"{key}p95_ms"
                    print(
                        f"{label:>5} {kinds:>7} {clock:>5} {raw[p50]:>8.2f} {raw[p95]:>7.2f} "
                        f"{found[p50]:>11.2f} {found[p95]:>7.2f} "
                        f"{found[p50] / raw[p50]:>9.2f}  {name}"
                    )
        if turn := result.get("turn_search"):
            print(
                f"{label:>5} search(…) in a reply (3 hits): p50 {turn['p50_ms']:.2f}, "
                f"p95 {turn['p95_ms']:.2f}"
            )
        if "semantic_vectors" in result:
            cold, held = result["semantic_cold"], result["semantic_held"]
            print(
                f"{label:>5} semantic ranking of the newest {result['semantic_vectors']:,} "
                f"vectors (no model): read each time p50 {cold['p50_ms']:.2f}, p95 "
                f"{cold['p95_ms']:.2f}; held p50 {held['p50_ms']:.2f}, p95 "
                f"{held['p95_ms']:.2f}"
            )


# --- firstchar, mirror, queue ------------------------------------------------------------------


def _first_char(asked: argparse.Namespace) -> None:
    """First streamed token → first visible character, in Chromium against a fake API."""
    if asked.runs < 1:
        raise BenchError("--runs must be at least 1")
    try:
        result = first_char_measure(runs=asked.runs, base_dir=settings.BASE_DIR)
    except RuntimeError as error:
        raise BenchError(str(error)) from error
    print(
        f"first token → first visible character over {result['runs']} runs: "
        f"p50 {result['p50_s']:.2f} s, max {result['max_s']:.2f} s (goal ≤ 0.5 s)"
    )


def _mirror(asked: argparse.Namespace) -> None:
    """The Mirror over a synthetic log, against the fake Messages API (bench/mirror.py)."""
    turns = asked.mirror_turns
    if asked.inside:
        _migrate_throwaway_stores()
        result = mirror_measure(turns=turns, progress=_note)
        print(json.dumps(result))
        return
    result = _run_inside(["mirror", "--mirror-turns", str(turns)])
    print(
        f"Mirror over {result['turns']:,} turns against the fake Messages API: "
        f"{result['seconds']:.1f} s wall, {result['requests']} requests, chunks by route "
        f"{result['route_chunks']}, summaries {result['summaries']}, "
        f"{result['suggestions']} suggestions staged"
    )
    print(f"{'pass':<10} {'model':<22} {'calls':>6} {'input tok':>10} {'output tok':>10}")
    for role, usage in result["passes"].items():
        print(
            f"{role:<10} {usage['model']:<22} {usage['calls']:>6} "
            f"{usage['input_tokens']:>10,} {usage['output_tokens']:>10,}"
        )


def _queue(asked: argparse.Namespace) -> None:
    """django-q2 pickup: enqueue → a running cluster has run the task and stored its result."""
    tasks = asked.turns
    if not asked.inside:
        result = _run_inside(["queue", "--turns", str(tasks)])
        broker = "Redis" if settings.REDIS_URL else "ORM (default store)"
        print(
            f"queue pickup over {result['tasks']} tasks, {broker} broker, "
            f"poll {settings.Q_CLUSTER['poll']} s: "
            f"p50 {result['p50_ms']:.0f} ms, p95 {result['p95_ms']:.0f} ms"
        )
        return
    _migrate_throwaway_stores()
    cluster = subprocess.Popen(
        [sys.executable, "manage.py", "qcluster"],
        cwd=settings.BASE_DIR,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        time.sleep(3)  # the cluster's start-up
        result = queue_pickup_measure(tasks=tasks, progress=lambda line: _note(f"  {line}"))
    finally:
        cluster.terminate()
        cluster.wait(timeout=30)
    print(json.dumps(result))


# --- load ---------------------------------------------------------------------------------------


def _load(asked: argparse.Namespace) -> None:
    """gunicorn, the worker and a locust swarm on throwaway stores (bench/load.py)."""
    if asked.seconds < 1 or asked.users < 1 or (asked.workers or 1) < 1:
        raise BenchError("--seconds, --users and --workers must be at least 1")
    postgresql = asked.backend == "postgresql"
    workers = asked.workers or (3 if postgresql else 1)
    if asked.inside:
        if not settings.COMPANION_OFFLINE:
            raise BenchError("--inside runs only offline")
        if settings.DATABASE_URL:
            _database_create(settings.DATABASE_URL)
        elif "sqlite" not in settings.DATABASES["events"]["ENGINE"]:
            raise BenchError("--inside runs only in throwaway stores")
        _stores_migrate()
        result = load_measure(
            seconds=asked.seconds,
            users=asked.users,
            workers=workers,
            base_dir=settings.BASE_DIR,
            progress=_note,
        )
        print(json.dumps(result))
        return
    for module in ("gunicorn", "locust"):
        if importlib.util.find_spec(module) is None:
            raise BenchError(f"{module} is missing: pip install -r requirements-dev.txt")
    arguments = ["load", "--seconds", str(asked.seconds), "--users", str(asked.users)]
    arguments += ["--workers", str(workers)]
    with ExitStack() as stack:
        data_dir = stack.enter_context(tempfile.TemporaryDirectory(prefix="silentstar-bench-"))
        env = {**_inside_env(data_dir), "SILENTSTAR_OWNER_PASSWORD": secrets.token_urlsafe(16)}
        env["SILENTSTAR_OWNER_USERNAME"] = "owner"
        command = _inside_command(arguments)
        if postgresql:
            command = [str(settings.BASE_DIR / "scripts" / "postgres"), *command]
            env["REDIS_URL"] = stack.enter_context(_redis_throwaway())
        _note(f"load: {asked.users} users for {asked.seconds} s on {asked.backend}...")
        done = subprocess.run(
            command, cwd=settings.BASE_DIR, env=env, stdout=subprocess.PIPE, text=True
        )
        if done.returncode != 0:
            raise BenchError(f"the load test failed (exit status {done.returncode})")
        result = json.loads(done.stdout.strip().splitlines()[-1])
    _load_print(result)


def _load_print(result: dict) -> None:
    print(
        f"{result['users']} users for {result['seconds']:.0f} s on {result['database']} "
        f"({result['broker']} broker), gunicorn workers: {result['workers']}; "
        f"{result['requests']:,} requests, {result['requests_per_s']:.1f} requests/s, "
        f"{result['failures']} errors"
    )
    print(f"{'request':<16} {'count':>7} {'errors':>7} {'p50 ms':>8} {'p99 ms':>8}")
    rows = [*result["kinds"].items(), ("all", {**result, "requests": result["requests"]})]
    for name, kind in rows:
        print(
            f"{name:<16} {kind['requests']:>7,} {kind['failures']:>7} {kind['p50_ms']:>8.0f} "
            f"{kind['p99_ms']:>8.0f}"
        )
    print(
        f"turns: {result['turns_sent']} sent, {result['turns_answered']} answered, "
        f"{result['turns_failed']} failed, {result['turns_unanswered']} still waiting at the end"
    )
    before, after = result["load_before"], result["load_after"]
    print(
        f"machine load (1, 5, 15 min) on {result['cpus']} processors: before "
        f"{' '.join(map(str, before))}, after {' '.join(map(str, after))}"
    )
    for error in result["errors"]:
        print(f"  {error}")


@contextmanager
def _redis_throwaway():
    """A Redis server on a spare port, nothing saved, stopped afterwards; yields its URL."""
    if shutil.which("redis-server") is None:
        raise BenchError("redis-server is missing (Debian: apt-get install redis-server)")
    port = spare_port()
    server = subprocess.Popen(
        [
            "redis-server",
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
        ],
        stdout=subprocess.DEVNULL,
    )
    try:
        port_wait(port, process=server)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        server.terminate()
        server.wait(timeout=30)


def _database_create(url: str) -> None:
    """The throwaway cluster's database: made here, so an existing one (not throwaway) fails."""
    import psycopg

    base, name = url.rsplit("/", 1)
    with psycopg.connect(f"{base}/postgres", autocommit=True) as connection:
        connection.execute(f'CREATE DATABASE "{name}"')


# --- the evaluation harness --------------------------------------------------------------------


def _eval(asked: argparse.Namespace) -> None:
    if asked.here and asked.semantic:
        raise BenchError(
            "--semantic is for the throwaway stores; with --here set "
            "SILENTSTAR_SEARCH_SEMANTIC instead"
        )
    if any(k < 1 for k in asked.k):
        raise BenchError("--k takes whole numbers of at least 1")
    try:
        if asked.here:
            if asked.migrate:
                _stores_migrate()
            result = evaluate(dataset_load(asked.dataset), ks=asked.k)
            print(json.dumps(result))
            if asked.json_file:
                asked.json_file.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
            return
        dataset_load(asked.dataset)  # a bad dataset is reported before anything starts
        semantic_on = settings.SEARCH_SEMANTIC if asked.semantic is None else asked.semantic == "on"
        result = evaluate_in_throwaway_stores(
            path=asked.dataset, ks=asked.k, semantic_on=semantic_on
        )
    except (DatasetError, RuntimeError) as error:
        raise BenchError(str(error)) from error
    ks = [str(k) for k in sorted(set(asked.k))]
    plain = result["plain_bm25"]
    columns = 8 * len(ks)
    print(f"{'':<14}{'search':>{columns}}   {'plain BM25 over single turns':>{columns}}")
    at_k = _figures_row(f"@{k}" for k in ks)
    print(f"{'category':<14}{at_k}   {at_k}")
    rows = [*result["by_category"].items(), ("overall", result["overall"])]
    for category, figures in rows:
        against = plain["overall"] if category == "overall" else plain["by_category"][category]
        print(
            f"{category:<14}{_figures_row(f'{figures[k]:.3f}' for k in ks)}   "
            f"{_figures_row(f'{against[k]:.3f}' for k in ks)}"
        )
    print(
        f"{result['questions']} questions. Plain BM25 over single turns is the yardstick of how "
        "hard the dataset is: the baseline published retrieval figures are set against."
    )
    if asked.json_file:
        asked.json_file.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")


def _figures_row(cells) -> str:
    return "".join(f"{cell:>8}" for cell in cells)


def _generate(asked: argparse.Namespace) -> None:
    unknown = [name for name in asked.names if name not in DATASETS]
    if unknown:
        raise BenchError(f"no dataset {unknown[0]!r} (there are: {', '.join(DATASETS)})")
    for name in asked.names or DATASETS:
        data = dataset_write(name, directory=asked.out)
        turns = sum(len(c["turns"]) for c in data["conversations"])
        print(
            f"{asked.out / f'{name}.json'}: {len(data['conversations'])} conversations, "
            f"{turns} turns, {len(data['questions'])} questions"
        )


# --- faults -------------------------------------------------------------------------------------


def _faults(asked: argparse.Namespace) -> None:
    """Faults injected into turns answered by a real worker (bench/faults.py)."""
    if asked.faults < 1 or asked.workers < 1:
        raise BenchError("--faults and --workers must be at least 1")
    if asked.inside:
        _faults_stores_migrate()
        try:
            result = faults_run(faults=asked.faults, seed=asked.seed, progress=_note)
        except ClusterStopped as error:
            raise BenchError(str(error)) from None
        print(json.dumps(result))
        return
    with ExitStack() as stack:
        env = {"SILENTSTAR_Q_WORKERS": str(asked.workers)}
        if asked.backend == "postgresql":
            env["DATABASE_URL"] = stack.enter_context(_faults_database())
        if asked.redis:
            env["REDIS_URL"] = stack.enter_context(_redis_throwaway())
        result = _run_inside(
            ["faults", "--faults", str(asked.faults), "--seed", str(asked.seed)], env=env
        )
    if asked.json_file:
        asked.json_file.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    _faults_print(result)


def _faults_print(result: dict) -> None:
    print(
        f"{result['faults']} faults (seed {result['seed']}) in {result['seconds']:.0f} s on "
        f"{result['database']}, the {result['broker']} broker and {result['workers']} workers, "
        f"{result['messages']} messages sent through the chat page to a real worker; stale "
        f"after {result['stale_seconds']} s, the recovery check every "
        f"{result['recovery_every_s']:g} s"
    )
    print(f"{'fault':<20} {'count':>6} {'happened':>9} {'recovered':>10} {'longest s':>10}")
    for kind, figures in result["kinds"].items():
        print(
            f"{kind:<20} {figures['faults']:>6} {figures['injected']:>9} "
            f"{figures['recovered']:>10} {figures['longest_s']:>10.1f}"
        )
    for kind, figures in result["kinds"].items():
        if "left" in figures:
            left = ", ".join(f"{state} {n}" for state, n in sorted(figures["left"].items()))
            print(
                f"{kind}, what the kill left: {left or 'no run'} (a whole run printed "
                f"{figures['lines']} lines and held the installation {figures['held_s']:.2f} s "
                "to its last line)"
            )
    for kind, figures in result["kinds"].items():
        if "written_before" in figures:
            before = ", ".join(f"{n:,}" for n in figures["written_before"]) or "none"
            after = ", ".join(f"{n:,}" for n in figures["written_after"]) or "none"
            print(
                f"{kind}: messages written when killed {before}; after the next import {after}; "
                f"found stopped within {figures['longest_detect_s']:.1f} s; written twice "
                f"{figures['twice']} (goal 0)"
            )
    print(f"events lost: {result['events_lost']} (goal 0)")
    print(f"duplicated: {result['duplicated']} (goal 0)")
    print(f"turns stuck: {result['turns_stuck']} (goal 0)")
    print(f"messages refused: {result['messages_refused']} (goal 0)")
    print(
        f"restores and imports left neither untouched, complete nor refused by manage.py check: "
        f"{result['transfers_left_unsafe']} (goal 0)"
    )
    print(f"image files left behind: {result['images_left_behind']} (goal 0)")
    print(
        f"turns re-run beyond their fault: {result['turns_rerun']} (goal 0: a second call to "
        "Claude that recovery made for a worker that was alive)"
    )
    print(
        f"longest time to recover: {result['longest_recovery_s']:.1f} s ({result['longest_kind']})"
    )
    before, after = result["load_before"], result["load_after"]
    print(
        f"machine load (1, 5, 15 min) on {result['cpus']} processors: before "
        f"{' '.join(map(str, before))}, after {' '.join(map(str, after))}"
    )
    for note in result["notes"]:
        print(f"  {note}")
    missed = [
        kind for kind, figures in result["kinds"].items() if figures["injected"] < figures["faults"]
    ]
    failed = (
        result["events_lost"]
        + result["duplicated"]
        + result["turns_stuck"]
        + result["messages_refused"]
        + result["transfers_left_unsafe"]
        + result["images_left_behind"]
    )
    if failed or missed:
        missed_text = f"; faults that did not happen: {', '.join(missed)}" if missed else ""
        raise BenchError(f"the system did not come through every fault{missed_text}")


def _faults_stores_migrate() -> None:
    """The throwaway stores the outer command made: SQLite files, or its own PostgreSQL
    database."""
    own_database = settings.DATABASES["default"]["NAME"]
    throwaway = "sqlite" in settings.DATABASES["events"]["ENGINE"] or str(own_database).startswith(
        FAULTS_DATABASE
    )
    if not settings.COMPANION_OFFLINE or not throwaway:
        raise BenchError("--inside runs only in throwaway stores, offline")
    _stores_migrate()


@contextmanager
def _faults_database():
    """A database of the run's own on the PostgreSQL server of DATABASE_URL; yields its URL.
    Afterwards it is dropped with every database named after it (the restore and import
    faults' installations)."""
    import psycopg

    url = os.environ.get("DATABASE_URL", "")
    if not url:
        raise BenchError(
            "--backend postgresql needs DATABASE_URL naming a PostgreSQL server: run it under "
            "scripts/postgres"
        )
    parts = urlsplit(url)
    server_url = urlunsplit(parts._replace(path="/postgres"))
    name = f"{FAULTS_DATABASE}{secrets.token_hex(4)}"
    with psycopg.connect(server_url, autocommit=True) as server:
        server.execute(f'CREATE DATABASE "{name}"')
    try:
        yield urlunsplit(parts._replace(path=f"/{name}"))
    finally:
        with psycopg.connect(server_url, autocommit=True) as server:
            made = server.execute(
                "SELECT datname FROM pg_database WHERE starts_with(datname, %s)", [name]
            )
            for (made_name,) in made.fetchall():
                server.execute(f'DROP DATABASE "{made_name}" WITH (FORCE)')


# --- fuzz ---------------------------------------------------------------------------------------


def _fuzz(asked: argparse.Namespace) -> None:
    """Tag soup through the parser and ingest (bench/fuzz.py)."""
    if asked.inputs < 1 or asked.ingest_every < 0:
        raise BenchError("--inputs must be at least 1 and --ingest-every at least 0")
    arguments = ["--inputs", str(asked.inputs), "--ingest-every", str(asked.ingest_every)]
    if asked.inside:
        from tqdm import tqdm  # a development requirement, needed by this command only

        _migrate_throwaway_stores()
        with tqdm(total=asked.inputs, unit=" inputs", unit_scale=True, mininterval=2) as bar:
            result = fuzz_run(
                inputs=asked.inputs,
                ingest_every=asked.ingest_every,
                seed=asked.seed,
                progress=bar.update,
            )
        print(json.dumps(result))
        return
    result = _run_inside(["fuzz", *arguments, "--seed", str(asked.seed)])
    seconds = result["seconds"]
    print(
        f"{result['inputs']:,} inputs ({result['characters']:,} characters, seed {asked.seed}) "
        f"in {seconds:.1f} s: {result['inputs'] / seconds:,.0f} inputs/s, parsing alone "
        f"{result['inputs'] / result['parse_seconds']:,.0f}/s"
    )
    print(f"  exceptions: {result['exceptions']}")
    print(
        f"  characters unaccounted for: {result['unaccounted_characters']} "
        f"(in {result['unaccounted_inputs']} inputs)"
    )
    if result["ingested"]:
        print(
            f"  ingested {result['ingested']:,} (one in {asked.ingest_every}, "
            f"{result['ingested'] / result['ingest_seconds']:,.0f}/s): "
            f"{result['ingest_exceptions']} exceptions, "
            f"{result['ingest_mismatches']} read back differently"
        )
    for kind, examples in result["examples"].items():
        print(f"  {kind}, first {len(examples)}:")
        for example in examples:
            print(f"    {example['input']!r}: {example['detail']}")
    if result["examples"]:
        raise BenchError("the parser or ingest failed on some inputs (listed above)")


# --- legacy -------------------------------------------------------------------------------------


def _legacy(asked: argparse.Namespace) -> None:
    """A synthetic legacy v5 pair imported by transfer.legacy (bench/legacy.py)."""
    if asked.events < 1:
        raise BenchError("--events must be at least 1")
    if asked.inside:
        _migrate_throwaway_stores()
        load_before = os.getloadavg()
        result = legacy_import_measure(
            gem=asked.pair / "silentstar.sqlite",
            events_path=asked.pair / "events.sqlite",
            progress=_note,
        )
        print(json.dumps({**result, "load_before": load_before, "load_after": os.getloadavg()}))
        return
    with tempfile.TemporaryDirectory(prefix="silentstar-bench-legacy-") as folder:
        _note(f"writing a legacy v5 pair of {asked.events:,} events...")
        began = time.perf_counter()
        legacy_pair_write(Path(folder), events=asked.events)
        _note(f"  written in {time.perf_counter() - began:.0f} s; importing it...")
        result = _run_inside(["legacy", "--events", str(asked.events), "--pair", folder])
    rows = result["rows"]
    print(
        f"legacy v5 pair, {rows['events']:,} events ({result['events_mb']:,.0f} MB) and a Gem "
        f"({result['gem_mb']:,.1f} MB), imported in {result['seconds']:,.1f} s: "
        f"{result['total_rows']:,} rows, {result['rows_per_s']:,.0f} rows/s "
        f"({result['events_per_s']:,.0f} events/s)"
    )
    print(
        f"peak memory of the importing process (ru_maxrss): {result['peak_rss_mb']:,.0f} MB "
        f"({result['before_rss_mb']:,.0f} MB before the import)"
    )
    print(f"a second run: {result['again_seconds']:,.1f} s, {result['again_imported']} rows added")
    print("rows: " + ", ".join(f"{table} {n:,}" for table, n in rows.items()))
    before, after = result["load_before"], result["load_after"]
    print(
        f"machine load (1, 5, 15 min) on {os.cpu_count()} processors: before "
        f"{' '.join(f'{n:.2f}' for n in before)}, after {' '.join(f'{n:.2f}' for n in after)}"
    )


# --- bridges -----------------------------------------------------------------------------------


def _bridges(asked: argparse.Namespace) -> None:
    """A long SillyTavern chat imported by transfer.bridges (bench/bridges.py)."""
    if asked.messages < 1:
        raise BenchError("--messages must be at least 1")
    if asked.inside:
        _migrate_throwaway_stores()
        load_before = os.getloadavg()
        result = bridges_measure(path=asked.chat, progress=_note)
        result["lorebooks"] = [
            lorebook_said(book)
            for book in lorebooks_measure(
                folder=asked.chat.parent,
                progress=_note,
                sizes=LOREBOOKS if asked.lorebooks == "full" else {},
            )
        ]
        print(json.dumps({**result, "load_before": load_before, "load_after": os.getloadavg()}))
        return
    with tempfile.TemporaryDirectory(prefix="silentstar-bench-bridges-") as folder:
        chat = Path(folder) / "chat.jsonl"
        _note(f"writing a SillyTavern chat of {asked.messages:,} messages...")
        sillytavern_chat_write(chat, messages=asked.messages)
        result = _run_inside(
            [
                "bridges",
                "--messages",
                str(asked.messages),
                "--lorebooks",
                asked.lorebooks,
                "--chat",
                str(chat),
            ]
        )
    stages = result["stages"]
    print(
        f"SillyTavern chat, {result['messages']:,} messages ({result['file_mb']:,.1f} MB), "
        f"imported in {result['seconds']:,.1f} s: {result['messages_per_s']:,.0f} messages/s "
        f"(read {stages['read']:,.1f} s, plan {stages['plan']:,.1f} s, "
        f"write {stages['write']:,.1f} s); {result['events']:,} events"
    )
    print(
        f"peak memory of the importing process (ru_maxrss): {result['peak_rss_mb']:,.0f} MB "
        f"({result['before_rss_mb']:,.0f} MB before the import)"
    )
    print(f"a second run: {result['again_seconds']:,.1f} s, {result['again_events']} events added")
    print(
        f"the preview: {result['turns']:,} turns; compressing them, "
        f"{result['estimate_calls']:,} to {result['estimate_calls_most']:,} calls, about "
        f"${result['estimate_about']:,.2f}, at most ${result['estimate_most']:,.2f}"
    )
    for line in result["lorebooks"]:
        print(line)
    before, after = result["load_before"], result["load_after"]
    print(
        f"machine load (1, 5, 15 min) on {os.cpu_count()} processors: before "
        f"{' '.join(f'{n:.2f}' for n in before)}, after {' '.join(f'{n:.2f}' for n in after)}"
    )


# --- continuity --------------------------------------------------------------------------------


def _continuity(asked: argparse.Namespace) -> None:
    """A long conversation lived, and the context of each return measured (bench/continuity.py)."""
    lived = _conversations_lived(asked, "continuity", conversation_measure)
    if lived is None:
        return
    results, began, load_before = lived
    print(
        f"{asked.dataset.name}, {len(results)} conversations, the Mirror offline every "
        f"{asked.mirror_every} turns and at each session's end; probes at each session's first "
        "turn after the first"
    )
    for line in figures_lines(results):
        print(line)
    print(
        "person: the person's events within the context's reach; holes: of those, shown nowhere "
        "(goal 0); evidence: evidence turns from before Recent, kept when 60% of their words are "
        "in the context (share), or, by chance, in Recent's turns and the probe's alone "
        "(recent); reach: the mean share of the events before Recent that the summaries shown "
        "cover"
    )
    for result in results:
        for example in result["hole_examples"]:
            print(f"  {result['conversation']} hole: {example}")
    _wall_time_said(began, load_before)


def _conversations_lived(
    asked: argparse.Namespace, command: str, measure: Callable[..., dict]
) -> tuple[list[dict], float, tuple[float, float, float]] | None:
    """Each conversation of the dataset lived and measured by ``measure`` in a process of its
    own (``command`` with ``--inside``): the results, when it began and the load then. Inside
    that process, the one conversation's result is printed as JSON, and None returned."""
    if asked.mirror_every < 1 or (asked.conversations is not None and asked.conversations < 1):
        raise BenchError("--mirror-every and --conversations must be at least 1")
    try:
        data = dataset_load(asked.dataset)
    except DatasetError as error:
        raise BenchError(str(error)) from error
    if asked.inside:
        from tqdm import tqdm

        _migrate_throwaway_stores()
        conversation = next(c for c in data["conversations"] if c["id"] == asked.conversation)
        questions = [q for q in data["questions"] if q["conversation"] == asked.conversation]
        with tqdm(total=len(conversation["turns"]), desc=asked.conversation, mininterval=2) as bar:
            result = measure(
                conversation=conversation,
                questions=questions,
                mirror_every=asked.mirror_every,
                progress=bar.update,
            )
        print(json.dumps(result))
        return None
    began, load_before = time.perf_counter(), os.getloadavg()
    results = []
    for conversation in data["conversations"][: asked.conversations]:
        _note(f"{conversation['id']}: {len(conversation['turns']):,} turns...")
        results.append(
            _run_inside(
                [
                    command,
                    str(asked.dataset.resolve()),
                    "--conversation",
                    conversation["id"],
                    "--mirror-every",
                    str(asked.mirror_every),
                ]
            )
        )
    return results, began, load_before


def _wall_time_said(began: float, load_before: tuple[float, float, float]) -> None:
    load_after = os.getloadavg()
    print(
        f"wall time {time.perf_counter() - began:.0f} s; machine load (1, 5, 15 min) on "
        f"{os.cpu_count()} processors: before {' '.join(f'{n:.2f}' for n in load_before)}, "
        f"after {' '.join(f'{n:.2f}' for n in load_after)}"
    )


# --- answerable --------------------------------------------------------------------------------


def _answerable(asked: argparse.Namespace) -> None:
    """Questions about a long conversation put to its context (bench/answerable.py)."""
    lived = _conversations_lived(asked, "answerable", conversation_answerable)
    if lived is None:
        return
    results, began, load_before = lived
    print(
        f"{asked.dataset.name}, {len(results)} conversations, the Mirror offline every "
        f"{asked.mirror_every} turns and at each session's end; strict: every evidence turn's "
        "words verbatim in the context; loose: 60% of each one's content words; fifo and "
        "unwoken at the same size, strict"
    )
    for line in answerable_lines(results):
        print(line)
    _wall_time_said(began, load_before)


# --- cache -------------------------------------------------------------------------------------


def _cache(asked: argparse.Namespace) -> None:
    """A real conversation replayed against the prompt cache's rules (bench/cache.py)."""
    if asked.turns < 1 or any(minimum < 1 for minimum in asked.minimums):
        raise BenchError("--turns and each of --minimums must be at least 1")
    try:
        model_price(settings.HEART_MODEL)
    except ValueError as error:
        raise BenchError(f"{error}: the cost per turn cannot be priced") from error
    try:
        data = dataset_load(asked.dataset)
    except DatasetError as error:
        raise BenchError(str(error)) from error
    conversations = {c["id"]: c for c in data["conversations"]}
    chosen = asked.conversation or next(iter(conversations), None)
    if chosen not in conversations:
        raise BenchError(
            f"no conversation {chosen!r} in {asked.dataset} "
            f"(there are: {', '.join(conversations) or 'none'})"
        )
    exchanges, person, companion = exchanges_of(conversations[chosen])
    if asked.turns > len(exchanges):
        raise BenchError(
            f"{chosen} has {len(exchanges)} turns of {person} answered by {companion}; "
            f"ask for --turns {len(exchanges)} or fewer"
        )
    if asked.inside:
        from tqdm import tqdm

        _migrate_throwaway_stores()
        desc = f"minimum {asked.minimum}" + (", kept warm" if asked.warm else "")
        with (
            tqdm(total=asked.turns, desc=desc, mininterval=2) as bar,
            override_settings(CACHE_KEEP_WARM=asked.warm),
        ):
            result = cache_replay(
                exchanges=exchanges[: asked.turns],
                minimum=asked.minimum,
                seed=asked.seed,
                idle=(lambda moment: cache_keep_warm(now=moment)) if asked.warm else None,
                progress=lambda: bar.update(1),
            )
        result["keep_warm"] = asked.warm
        print(json.dumps(result))
        return
    results = []
    warm_modes = {"off": [False], "on": [True], "both": [False, True]}[asked.keep_warm]
    for minimum, warm in itertools.product(asked.minimums, warm_modes):
        kept = ", kept warm" if warm else ""
        _note(f"{chosen}: {asked.turns} turns, a cache minimum of {minimum:,} tokens{kept}...")
        results.append(
            _run_inside(
                [
                    "cache",
                    str(asked.dataset.resolve()),
                    "--conversation",
                    chosen,
                    "--turns",
                    str(asked.turns),
                    "--seed",
                    str(asked.seed),
                    "--minimum",
                    str(minimum),
                    *(["--warm"] if warm else []),
                ]
            )
        )
    for line in cache_figures_lines(
        results, conversation=chosen, person=person, companion=companion
    ):
        print(line)
    if asked.json_file:
        figures = {"conversation": chosen, "person": person, "companion": companion}
        asked.json_file.write_text(
            json.dumps(
                {**figures, "replays": [{**result, **shares(result)} for result in results]},
                indent=1,
            )
            + "\n",
            encoding="utf-8",
        )


# --- throwaway stores --------------------------------------------------------------------------


def _run_inside(arguments: list[str], *, env: dict[str, str] | None = None) -> dict:
    """Run this command again, with --inside, in a new process on throwaway SQLite stores (or
    the stores ``env`` names)."""
    with tempfile.TemporaryDirectory(prefix="silentstar-bench-") as data_dir:
        if not any((env or {}).get(variable) for variable in STORE_URLS):
            try:
                stores_start(Path(data_dir))
            except StoresMissing as error:
                raise BenchError(str(error)) from None
        done = subprocess.run(
            _inside_command(arguments),
            cwd=settings.BASE_DIR,
            env={**_inside_env(data_dir), **(env or {})},
            stdout=subprocess.PIPE,
            text=True,
        )
        if done.returncode != 0:
            raise BenchError(f"the benchmark ({' '.join(arguments)}) failed")
        return json.loads(done.stdout.strip().splitlines()[-1])


def _migrate_throwaway_stores() -> None:
    if not settings.COMPANION_OFFLINE or "sqlite" not in settings.DATABASES["events"]["ENGINE"]:
        raise BenchError("--inside runs only in throwaway SQLite stores, offline")
    _stores_migrate()


def _stores_migrate() -> None:
    """Migrate the stores, and give them the source documents' identities, whose names the
    benchmarks' conversations speak in (luna, claude)."""
    for alias in ("default", "events", "summaries", "snapshots"):
        call_command("migrate", database=alias, verbosity=0)
    call_command("source_identities", stdout=io.StringIO())


def _inside_command(arguments: list[str]) -> list[str]:
    return [sys.executable, "-m", "bench", *arguments, "--inside"]


def _inside_env(data_dir: str) -> dict[str, str]:
    """Offline, on SQLite stores in ``data_dir``."""
    return {
        **os.environ,
        **dict.fromkeys(STORE_URLS, ""),
        "SILENTSTAR_DATA_DIR": data_dir,
        "ANTHROPIC_API_KEY": "",
        "SILENTSTAR_LOG_LEVEL": "WARNING",
        # As in production, whatever the caller's environment says: debug mode records every
        # SQL query, a cost turns do not have there. Its processes share the secret key kept in
        # data_dir, and it serves nothing: its cluster must start whatever hosts are allowed.
        "SILENTSTAR_DEBUG": "false",
        "SILENTSTAR_SECRET_KEY": "",
        "SILENTSTAR_ALLOW_PLAIN_HTTP": "true",
    }
