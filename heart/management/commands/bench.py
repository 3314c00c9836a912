import json
import os
import secrets
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError

from heart.bench import (
    TurnRunner,
    first_char_measure,
    overhead_figures,
    queue_pickup_measure,
    synthetic_gem_build,
)
from mirror.bench import mirror_measure

SIZES = {"10k": 10_000, "1M": 1_000_000}
STORE_URLS = [
    "DATABASE_URL",
    "EVENTS_DATABASE_URL",
    "SUMMARIES_DATABASE_URL",
    "SNAPSHOTS_DATABASE_URL",
]


class Command(BaseCommand):
    help = (
        "Benchmarks. `bench turns`: build synthetic Gems (10k and 1M events, 5k fragments, 20k "
        "edges, 100k working-memory rows of which 1k active) in throwaway SQLite stores, run "
        "turns with the offline companion and print the turn's own overhead (all but the model). "
        "`bench queue`: django-q2 pickup on a running cluster. `bench firstchar`: in Chromium, "
        "the time from the fake Messages API's first streamed token to the first visible "
        "character of the reply (needs the development requirements and Chromium). "
        "`bench mirror`: compress a synthetic log (--mirror-turns, 1,000 by default) with the "
        "Mirror against the fake Messages API; passes, tokens and wall time. `bench search`: "
        "on the same synthetic Gems, lens search p50/p95 next to the raw FTS5 query."
    )

    def add_arguments(self, parser):
        parser.add_argument("what", choices=["turns", "queue", "firstchar", "mirror", "search"])
        parser.add_argument("--sizes", nargs="+", choices=list(SIZES), default=list(SIZES))
        parser.add_argument("--turns", type=int, default=200, help="turns (or queue tasks) to run")
        parser.add_argument("--runs", type=int, default=10, help="replies to time (firstchar)")
        parser.add_argument("--mirror-turns", type=int, default=1000, help="turns (mirror)")
        parser.add_argument("--queries", type=int, default=50, help="queries to time (search)")
        parser.add_argument(
            "--semantic",
            action="store_true",
            help="search: also time the semantic ranking, vectors read each time and held "
            "(needs the semantic search's requirements; no model is run)",
        )
        parser.add_argument("--size", type=int, help=argparse_hidden())
        parser.add_argument("--inside", action="store_true", help=argparse_hidden())

    def handle(
        self,
        *args,
        what,
        sizes,
        turns,
        runs,
        size,
        inside,
        mirror_turns,
        queries,
        semantic,
        **options,
    ):
        if what == "mirror":
            self._mirror(inside=inside, turns=mirror_turns)
            return
        if what == "search":
            self._search(sizes=sizes, queries=queries, size=size, inside=inside, semantic=semantic)
            return
        if what == "firstchar":
            self._first_char(runs=runs)
            return
        if what == "queue":
            self._queue(inside=inside, tasks=turns)
            return
        if inside:
            self._turns_here(events=size)
            return
        results = self._turns_interleaved(sizes=sizes, turns=turns)
        self.stdout.write(
            f"\n{'size':>5} {'events':>10} {'build s':>8} {'p50 ms':>8} {'p95 ms':>8}"
        )
        for label, result in results.items():
            self.stdout.write(
                f"{label:>5} {result['events']:>10,} {result['build_s']:>8.1f} "
                f"{result['p50_ms']:>8.1f} {result['p95_ms']:>8.1f}"
            )
        if {"10k", "1M"} <= results.keys():
            ratio = results["1M"]["p50_ms"] / results["10k"]["p50_ms"]
            self.stdout.write(
                f"p50 ratio 1M / 10k: {ratio:.2f} ({turns} turns each, {TURNS_AT_ONCE} at a "
                "time by turns)"
            )

    def _search(
        self, *, sizes: list[str], queries: int, size: int | None, inside: bool, semantic: bool
    ) -> None:
        """lens.search.search next to the raw FTS5 query on the same index (lens/bench.py)."""
        from lens.bench import search_measure

        if inside:
            self._migrate_throwaway_stores()
            result = search_measure(
                events=size,
                queries=queries,
                progress=lambda line: self.stderr.write(f"  {line}"),
                semantic=semantic,
            )
            self.stdout.write(json.dumps(result))
            return
        self.stdout.write(
            f"{'size':>5} {'kinds':>7} {'clock':>5} {'raw p50':>8} {'p95':>7} {'search p50':>11} "
            f"{'p95':>7} {'ratio p50':>9}  timed (ms; cpu: this process's processor time)"
        )
        for label in sizes:
            self.stderr.write(f"[{label}] building a synthetic Gem of {SIZES[label]:,} events...")
            result = self._run_inside(
                ["search", "--size", str(SIZES[label]), "--queries", str(queries)]
                + (["--semantic"] if semantic else [])
            )
            for kinds in ("event", "all"):
                raw = result[f"{kinds}_raw"]
                for search, name in (("search", "search"), ("read", "search, every passage read")):
                    found = result[f"{kinds}_{search}"]
                    for clock, key in (("wall", ""), ("cpu", "cpu_")):
                        p50, p95 = f"{key}p50_ms", f"{key}p95_ms"
                        self.stdout.write(
                            f"{label:>5} {kinds:>7} {clock:>5} {raw[p50]:>8.2f} {raw[p95]:>7.2f} "
                            f"{found[p50]:>11.2f} {found[p95]:>7.2f} "
                            f"{found[p50] / raw[p50]:>9.2f}  {name}"
                        )
            if turn := result.get("turn_search"):
                self.stdout.write(
                    f"{label:>5} search(…) in a reply (3 hits): p50 {turn['p50_ms']:.2f}, "
                    f"p95 {turn['p95_ms']:.2f}"
                )
            if "semantic_vectors" in result:
                cold, held = result["semantic_cold"], result["semantic_held"]
                self.stdout.write(
                    f"{label:>5} semantic ranking of the newest {result['semantic_vectors']:,} "
                    f"vectors (no model): read each time p50 {cold['p50_ms']:.2f}, p95 "
                    f"{cold['p95_ms']:.2f}; held p50 {held['p50_ms']:.2f}, p95 "
                    f"{held['p95_ms']:.2f}"
                )

    def _first_char(self, *, runs: int) -> None:
        """First streamed token → first visible character, in Chromium against a fake API."""
        if runs < 1:
            raise CommandError("--runs must be at least 1")
        try:
            result = first_char_measure(runs=runs, base_dir=settings.BASE_DIR)
        except RuntimeError as error:
            raise CommandError(str(error)) from error
        self.stdout.write(
            f"first token → first visible character over {result['runs']} runs: "
            f"p50 {result['p50_s']:.2f} s, max {result['max_s']:.2f} s (goal ≤ 0.5 s)"
        )

    def _mirror(self, *, inside: bool, turns: int) -> None:
        """The Mirror over a synthetic log, against the fake Messages API (mirror/bench.py)."""
        if inside:
            self._migrate_throwaway_stores()
            result = mirror_measure(turns=turns, progress=lambda line: self.stderr.write(line))
            self.stdout.write(json.dumps(result))
            return
        result = self._run_inside(["mirror", "--mirror-turns", str(turns)])
        self.stdout.write(
            f"Mirror over {result['turns']:,} turns against the fake Messages API: "
            f"{result['seconds']:.1f} s wall, {result['requests']} requests, chunks by route "
            f"{result['route_chunks']}, summaries {result['summaries']}, "
            f"{result['suggestions']} suggestions staged"
        )
        self.stdout.write(
            f"{'pass':<10} {'model':<22} {'calls':>6} {'input tok':>10} {'output tok':>10}"
        )
        for role, usage in result["passes"].items():
            self.stdout.write(
                f"{role:<10} {usage['model']:<22} {usage['calls']:>6} "
                f"{usage['input_tokens']:>10,} {usage['output_tokens']:>10,}"
            )

    def _queue(self, *, inside: bool, tasks: int) -> None:
        """django-q2 pickup: enqueue → a running cluster has run the task and stored its result."""
        if not inside:
            result = self._run_inside(["queue", "--turns", str(tasks)])
            broker = "Redis" if settings.REDIS_URL else "ORM (default store)"
            self.stdout.write(
                f"queue pickup over {result['tasks']} tasks, {broker} broker, "
                f"poll {settings.Q_CLUSTER['poll']} s: "
                f"p50 {result['p50_ms']:.0f} ms, p95 {result['p95_ms']:.0f} ms"
            )
            return
        self._migrate_throwaway_stores()
        cluster = subprocess.Popen(
            [sys.executable, "manage.py", "qcluster"],
            cwd=settings.BASE_DIR,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            time.sleep(3)  # the cluster's start-up
            result = queue_pickup_measure(
                tasks=tasks, progress=lambda line: self.stderr.write(f"  {line}")
            )
        finally:
            cluster.terminate()
            cluster.wait(timeout=30)
        self.stdout.write(json.dumps(result))

    def _run_inside(self, arguments: list[str]) -> dict:
        """Run this command again, with --inside, in a new process on throwaway SQLite stores."""
        with tempfile.TemporaryDirectory(prefix="silentstar-bench-") as data_dir:
            done = subprocess.run(
                _inside_command(arguments),
                cwd=settings.BASE_DIR,
                env=_inside_env(data_dir),
                stdout=subprocess.PIPE,
                text=True,
            )
            if done.returncode != 0:
                raise CommandError(f"the benchmark ({' '.join(arguments)}) failed")
            return json.loads(done.stdout.strip().splitlines()[-1])

    def _migrate_throwaway_stores(self) -> None:
        if not settings.COMPANION_OFFLINE or "sqlite" not in settings.DATABASES["events"]["ENGINE"]:
            raise CommandError("--inside runs only in throwaway SQLite stores, offline")
        for alias in ("default", "events", "summaries", "snapshots"):
            call_command("migrate", database=alias, verbosity=0)

    def _turns_interleaved(self, *, sizes: list[str], turns: int) -> dict[str, dict]:
        """Each size's Gem is built in a process of its own (one after the other); then the
        processes take turns, ``TURNS_AT_ONCE`` at a time, so a load on the machine that comes
        and goes falls on every size alike and the ratio stays fair."""
        with ExitStack() as stack:
            runs = {}
            for label in sizes:
                self.stderr.write(
                    f"[{label}] building a synthetic Gem of {SIZES[label]:,} events..."
                )
                data_dir = stack.enter_context(
                    tempfile.TemporaryDirectory(prefix="silentstar-bench-")
                )
                runs[label] = stack.enter_context(
                    _TurnsInside(events=SIZES[label], data_dir=data_dir)
                )
            overheads: dict[str, list[float]] = {label: [] for label in sizes}
            for first in range(0, turns, TURNS_AT_ONCE):
                batch = min(TURNS_AT_ONCE, turns - first)
                for label, run in runs.items():
                    overheads[label] += run.turns(batch)
                if (first + batch) % 50 == 0 or first + batch == turns:
                    self.stderr.write(f"  turns {first + batch}/{turns} at each size")
            return {
                label: {**run.built, **overhead_figures(overheads[label])}
                for label, run in runs.items()
            }

    def _turns_here(self, *, events: int) -> None:
        """Inside: build, say so, then run as many turns as each line of stdin asks for."""
        self._migrate_throwaway_stores()
        began = time.perf_counter()
        synthetic_gem_build(
            events=events,
            fragments=5_000,
            edges=20_000,
            working_memory=100_000,
            active=1_000,
            progress=lambda line: self.stderr.write(f"  {line}"),
        )
        built = {"events": events, "build_s": time.perf_counter() - began}
        self.stdout.write(json.dumps(built))
        self.stdout.flush()
        runner = TurnRunner()
        for line in sys.stdin:
            self.stdout.write(json.dumps(runner.run(int(line))))
            self.stdout.flush()


TURNS_AT_ONCE = 10  # turns a size runs before the other takes its turn


class _TurnsInside:
    """``bench turns --inside`` in a process of its own on throwaway stores, asked for turns."""

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

    def turns(self, count: int) -> list[float]:
        self.process.stdin.write(f"{count}\n")
        self.process.stdin.flush()
        return self._answer()

    def _answer(self):
        line = self.process.stdout.readline()
        if not line:
            self.process.kill()
            raise CommandError(f"the benchmark stopped (exit status {self.process.wait()})")
        return json.loads(line)


def _inside_command(arguments: list[str]) -> list[str]:
    return [sys.executable, "manage.py", "bench", *arguments, "--inside"]


def _inside_env(data_dir: str) -> dict[str, str]:
    """Offline, on SQLite stores in ``data_dir``."""
    return {
        **os.environ,
        **dict.fromkeys(STORE_URLS, ""),
        "SILENTSTAR_DATA_DIR": data_dir,
        "ANTHROPIC_API_KEY": "",
        "SILENTSTAR_LOG_LEVEL": "WARNING",
        # As in production: debug mode records every SQL query, a cost turns do not have there.
        "SILENTSTAR_DEBUG": "false",
        "SILENTSTAR_SECRET_KEY": secrets.token_urlsafe(50),
    }


def argparse_hidden():
    import argparse

    return argparse.SUPPRESS
