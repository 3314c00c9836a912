"""``python -m bench turns``: synthetic Gems of a given size and the turn's own overhead.

The command gives each size a throwaway data folder and a process of its own, builds the Gem
there (``synthetic_gem_build``) and asks each process for turns in batches (``TurnRunner``).
"""

import random
import statistics
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta

from django.db import connections, transaction
from django.utils import timezone

from bench.search import event_index_built_afterwards
from gem.models import Fragment, FragmentEdge, WorkingMemory
from gem.state import TURN_COUNTER, state_set
from heart.services import turn_claim_next, turn_run, turn_submit
from silentstar import claude

WORDS = (
    "rain window tea crewneck fairy soft grey light evening morning walk garden letter quiet "
    "warm stitch needle yarn coat river bread music piano sister house door cat"
).split()
USERS = ["luna", "hasuki", "renki", "chloe", "strah"]
WM_TYPES = ["feeling", "thought", "pattern", "desc", "plan", "pin"]
INSERT_BATCH = 20_000


def _sentence(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words))


def synthetic_gem_build(
    *,
    events: int,
    fragments: int,
    edges: int,
    working_memory: int,
    active: int,
    progress: Callable[[str], None],
    seed: int = 7,
) -> None:
    """Fill the (empty, throwaway) stores with a conversation history and a curated Gem."""
    rng = random.Random(seed)
    start = timezone.now() - timedelta(minutes=events)
    with _page_cache_kept("events"), event_index_built_afterwards():
        _events_insert(events=events, start=start, rng=rng, progress=progress)
    progress("event index built")

    keys = [f"topic-{n}" for n in range(fragments)]
    Fragment.objects.bulk_create(
        [
            Fragment(
                key=key,
                ambient=_sentence(rng, 12),
                recognition=_sentence(rng, 40),
                inventory=_sentence(rng, 120),
            )
            for key in keys
        ],
        batch_size=2_000,
    )
    pairs = set()
    while len(pairs) < edges:
        source, target = rng.sample(keys, 2)
        pairs.add((source, target))
    FragmentEdge.objects.bulk_create(
        [FragmentEdge(source_id=s, target_id=t, relation="related") for s, t in pairs],
        batch_size=5_000,
    )
    progress(f"fragments {fragments:,}, edges {edges:,}")

    now = timezone.now()
    items = []
    for n in range(working_memory):
        is_active = n >= working_memory - active
        age = timedelta(hours=rng.uniform(0, 48) if is_active else rng.uniform(48, 5_000))
        items.append(
            WorkingMemory(
                event_id=rng.randint(1, events),
                type=rng.choice(WM_TYPES),
                content=_sentence(rng, 8),
                status="active" if is_active else rng.choice(["resolved", "decayed", "dropped"]),
                turn=events // 2 - rng.randint(0, 50),
                created_at=now - age,
                refreshed_at=now - age,
            )
        )
    WorkingMemory.objects.bulk_create(items, batch_size=5_000)
    state_set(TURN_COUNTER, events // 2)
    progress(f"working memory {working_memory:,} ({active:,} active)")


def _events_insert(
    *, events: int, start: datetime, rng: random.Random, progress: Callable[[str], None]
) -> None:
    """The conversation: a person's message, then the companion's reply, a minute apart."""
    event_sql = (
        "INSERT INTO heart_event (id, ts, content, actor, image) VALUES (%s, %s, %s, %s, '')"
    )
    tag_sql = "INSERT INTO heart_eventtag (event_id, tag) VALUES (%s, %s)"
    for first in range(1, events + 1, INSERT_BATCH):
        rows, tags = [], []
        for event_id in range(first, min(first + INSERT_BATCH, events + 1)):
            ts = start + timedelta(minutes=event_id - 1)
            if event_id % 2:
                user = rng.choice(USERS)
                content = f"<{user}>{_sentence(rng, 18)}</{user}>"
                rows.append((event_id, ts, content, user))
                tags.append((event_id, user))
            else:
                content = (
                    f"<claude><say>{_sentence(rng, 22)}</say><do>{_sentence(rng, 12)}</do></claude>"
                )
                rows.append((event_id, ts, content, "claude"))
                tags.extend([(event_id, "claude"), (event_id, "say"), (event_id, "do")])
        with transaction.atomic(using="events"), connections["events"].cursor() as cursor:
            cursor.executemany(event_sql, rows)
            cursor.executemany(tag_sql, tags)
        progress(f"events {min(first + INSERT_BATCH - 1, events):,}/{events:,}")


@contextmanager
def _page_cache_kept(alias: str) -> Iterator[None]:
    """The connection's SQLite page cache as it was before, whatever the block sets: the
    index build enlarges it, and the turns measured afterwards must run as deployed."""
    with connections[alias].cursor() as cursor:
        cursor.execute("PRAGMA cache_size")
        (pages,) = cursor.fetchone()
    try:
        yield
    finally:
        with connections[alias].cursor() as cursor:
            cursor.execute(f"PRAGMA cache_size = {int(pages)}")


class TurnRunner:
    """Turns with the offline companion, a batch at a time; the turn's own time of each is
    its total less Claude's. The messages follow one random sequence however the turns are
    batched."""

    def __init__(self, *, seed: int = 11) -> None:
        self.rng = random.Random(seed)
        self.done = 0

    def run(self, turns: int) -> list[float]:
        """The overhead of each of the next ``turns`` turns, in milliseconds."""
        real_complete = claude.complete
        model_seconds = []

        def timed_complete(**kwargs):
            began = time.perf_counter()
            try:
                return real_complete(**kwargs)
            finally:
                model_seconds.append(time.perf_counter() - began)

        claude.complete = timed_complete
        overheads = []
        try:
            for _ in range(turns):
                text = f"<luna>{_sentence(self.rng, 15)} [topic-{self.rng.randrange(100)}]</luna>"
                began = time.perf_counter()
                submitted = turn_submit(text=text, actor="luna", enqueue=False)
                turn = turn_claim_next()
                assert turn is not None and turn.pk == submitted.pk
                finished = turn_run(turn=turn)
                total = time.perf_counter() - began
                if finished.status != "done":
                    raise RuntimeError(f"turn {self.done} failed: {finished.error}")
                overheads.append((total - model_seconds[-1]) * 1000)
                self.done += 1
        finally:
            claude.complete = real_complete
        return overheads


def overhead_figures(overheads_ms: list[float]) -> dict:
    """p50, p95 and the worst of the turns' overheads."""
    ordered = sorted(overheads_ms)
    return {
        "turns": len(ordered),
        "p50_ms": statistics.median(ordered),
        "p95_ms": ordered[int(0.95 * (len(ordered) - 1))],
        "max_ms": ordered[-1],
    }
