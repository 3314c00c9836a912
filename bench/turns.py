"""``python -m bench turns``: synthetic Gems of a given size and the turn's own overhead.

The command gives each size a throwaway data folder and a process of its own, builds the Gem
there (``synthetic_gem_build``) and asks each process for turns in batches (``TurnRunner``).

What is said is shaped like conversation, in the words of the search benchmark
(``bench.search``): a vocabulary of a few thousand words drawn by Zipf's law, in sentences of
varied length, so a turn's search for its message matches a part of the log, not most of it.
The fragments are named as a person names things (made-up names, "old-grey" or "Old Grey"),
and one message in five, in the log and in the turns, names one of them among its words, the
few fragments talked about most named most often.
"""

import random
import statistics
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta

from django.db import connections, transaction
from django.utils import timezone

from bench.search import (
    SYLLABLES,
    USERS,
    WM_TYPES,
    ZipfText,
    event_index_built_afterwards,
    vocabulary,
)
from gem.models import Fragment, FragmentEdge, WorkingMemory
from gem.state import TURN_COUNTER, state_set
from heart.models import ContextSnapshot
from heart.services import turn_claim_next, turn_run, turn_submit
from silentstar import claude

VOCABULARY_SEED = 5  # the search benchmark's vocabulary: the same words on both benchmarks
KEYS_SEED = 13
NAMING_SHARE = 1 / 5  # of the person's messages, those that name a fragment's key
INSERT_BATCH = 20_000


def fragment_names(count: int) -> list[tuple[str, list[str]]]:
    """The key and the triggers of ``count`` fragments, the same for every count (a smaller
    Gem's are the first of a larger one's): made-up names no word of the vocabulary is, one key
    in three of two words (``old-grey``), and one fragment in five with a trigger or two, as an
    imported lorebook entry has (``Sea Fog``)."""
    rng = random.Random(KEYS_SEED)
    taken = set(vocabulary(VOCABULARY_SEED))

    def word() -> str:
        while True:
            made_up = "".join(rng.choice(SYLLABLES) for _ in range(rng.choice([2, 3, 3, 4])))
            if made_up not in taken:
                taken.add(made_up)
                return made_up

    names = []
    for _ in range(count):
        key = f"{word()}-{word()}" if rng.random() < 1 / 3 else word()
        triggers = []
        if rng.random() < 1 / 5:
            triggers = [
                " ".join(word().capitalize() for _ in range(rng.choice([1, 2])))
                for _ in range(rng.choice([1, 2]))
            ]
        names.append((key, triggers))
    return names


class Conversation:
    """What the person and the companion say: Zipf-distributed sentences, and one of the
    person's messages in five naming a fragment among its words, by its key as written
    (``old-grey``) or as a person writes a name (``Old Grey``), or by a trigger."""

    def __init__(self, *, fragments: int, rng: random.Random) -> None:
        self.rng = rng
        self.text = ZipfText(vocabulary(VOCABULARY_SEED), rng)
        self.names = fragment_names(fragments)
        self.talked_about = ZipfText(list(range(fragments)), rng)

    def said(self, median: int = 12) -> str:
        """A sentence, as the companion says it."""
        return self.text.sentence(median)

    def message(self) -> str:
        """A person's message."""
        words = self.text.sentence().split()
        if self.names and self.rng.random() < NAMING_SHARE:
            key, triggers = self.names[self.talked_about.word()]
            name = self.rng.choice([key, *triggers])
            if name == key and self.rng.random() < 1 / 2:
                name = " ".join(part.capitalize() for part in key.split("-"))
            words.insert(self.rng.randint(0, len(words)), name)
        return " ".join(words)


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
    said = Conversation(fragments=fragments, rng=rng)
    start = timezone.now() - timedelta(minutes=events)
    with _page_cache_kept("events"), event_index_built_afterwards():
        _events_insert(events=events, start=start, said=said, progress=progress)
    progress("event index built")

    Fragment.objects.bulk_create(
        [
            Fragment(
                key=key,
                triggers=triggers,
                ambient=said.said(12),
                recognition=said.said(40),
                inventory=said.said(120),
            )
            for key, triggers in said.names
        ],
        batch_size=2_000,
    )
    keys = [key for key, _ in said.names]
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
                content=said.said(8),
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
    *, events: int, start: datetime, said: Conversation, progress: Callable[[str], None]
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
                user = said.rng.choice(USERS)
                content = f"<{user}>{said.message()}</{user}>"
                rows.append((event_id, ts, content, user))
                tags.append((event_id, user))
            else:
                content = f"<claude><say>{said.said(16)}</say><do>{said.said(8)}</do></claude>"
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
    its total less Claude's, and ``found`` the passages each turn's context found for its
    message (read after the turn, outside its time). The messages follow one random sequence
    however the turns are batched."""

    def __init__(self, *, fragments: int, seed: int = 11) -> None:
        self.said = Conversation(fragments=fragments, rng=random.Random(seed))
        self.done = 0
        self.found: list[int] = []

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
                text = f"<luna>{self.said.message()}</luna>"
                began = time.perf_counter()
                submitted = turn_submit(text=text, actor="luna", enqueue=False)
                turn = turn_claim_next()
                assert turn is not None and turn.pk == submitted.pk
                finished = turn_run(turn=turn)
                total = time.perf_counter() - began
                if finished.status != "done":
                    raise RuntimeError(f"turn {self.done} failed: {finished.error}")
                overheads.append((total - model_seconds[-1]) * 1000)
                self.found.append(_found_passages(turn.pk))
                self.done += 1
        finally:
            claude.complete = real_complete
        return overheads


def _found_passages(turn_id: int) -> int:
    included = ContextSnapshot.objects.filter(turn=turn_id).values_list("items_included", flat=True)
    return len(included.get()["found"])


def overhead_figures(overheads_ms: list[float], found: list[int] | None = None) -> dict:
    """p50, p95 and the worst of the turns' overheads; with ``found`` (the passages each turn
    found), the share of turns that found any and the passages found on average."""
    ordered = sorted(overheads_ms)
    figures = {
        "turns": len(ordered),
        "p50_ms": statistics.median(ordered),
        "p95_ms": ordered[int(0.95 * (len(ordered) - 1))],
        "max_ms": ordered[-1],
    }
    if found:
        figures["found_share"] = sum(1 for count in found if count) / len(found)
        figures["found_mean"] = statistics.fmean(found)
    return figures
