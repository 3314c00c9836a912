"""``python -m bench answerable``: how many questions about a long real conversation the context
could answer, at the end of the conversation and at the first turn after the evidence.

One conversation of a dataset in the evaluation harness's format is lived into the event log as
``bench continuity`` lives it (offline, the Mirror on its schedule). Each question of the
single-hop, multi-hop, temporal and open-domain kinds is then put as the person's message, and
the context the Heart would build for it is assembled (``context_for_event``) and thrown away
(the question's event is written in a savepoint that is rolled back, so no question sees
another), at two moments:

- ``end``: after the whole conversation (the goal);
- ``return``: at the first turn of the session after the question's last evidence, before
  anything later exists.

A question is answerable when every evidence turn is in the context's user text: ``strict``,
its words verbatim (spaces aside); ``loose``, at least ``KEPT_SHARE`` of its content words. The
part that brought each evidence turn is named: Recent, a summary, Found (old conversation found
for the message) or Recalled (a fragment); the offline Mirror copies sentences rather than
summarising, so a summary's share here flatters it.

Beside it, at the same measured size (the estimate of the user text), for the ``end`` moment:
``fifo``, the most recent turns of the conversation that fit (the plain baseline); ``unwoken``,
the project with nothing woken nor found for the message (``BUDGET_FOUND`` 0); and the full
conversation with its size. Cost per turn at the default model's prices, the prefix up to the
last cache breakpoint read from the cache and the rest sent uncached, against the same turn with
no cache: a bound on the saving, which ``bench cache`` measures by replaying a conversation.
"""

import math
import time
from collections.abc import Callable

from django.conf import settings
from django.db import transaction
from django.test.utils import override_settings

from bench.continuity import (
    KEPT_SHARE,
    PERSON,
    content_words,
    mirror_when_due,
    session_of,
    turn_written,
    untagged,
)
from bench.evaluate import moment_aware
from events.models import Event
from gem.selectors import gem_current
from heart.context import context_for_event
from heart.inspect import sections_of
from mirror.models import Summary
from silentstar.pricing import Tokens, cache_minimum, cost, for_model
from silentstar.router import store_of
from silentstar.tokens import estimate_tokens

CATEGORIES = ("single-hop", "multi-hop", "temporal", "open-domain")
MOMENTS = ("end", "return")
PARTS = ("Recent", "Summaries", "Found", "Recalled", "Lingering")


class _Discard(Exception):
    """Raised to roll the question's event back."""


def _plain(text: str) -> str:
    return " ".join(text.split()).casefold()


def conversation_answerable(
    *,
    conversation: dict,
    questions: list[dict],
    mirror_every: int,
    progress: Callable[[int], None] = lambda _: None,
) -> dict:
    """Live ``conversation`` into the (empty) stores, ask each question at both moments, and
    return one row per question and moment."""
    began = time.perf_counter()
    turns = conversation["turns"]
    first_speaker = turns[0]["speaker"]
    questions = [q for q in questions if q["category"] in CATEGORIES]
    session_index = {}
    for turn in turns:
        session_index.setdefault(session_of(turn["id"]), len(session_index))
    texts = {turn["id"]: untagged(turn["text"]) for turn in turns}
    by_return: dict[int, list[dict]] = {}  # session index → questions asked at its first turn
    for question in questions:
        last = max(session_index[session_of(turn_id)] for turn_id in question["evidence"])
        by_return.setdefault(last + 1, []).append(question)
    event_of: dict[str, int] = {}
    written: list[tuple[int, str, str]] = []  # event id, actor, display text
    rows: list[dict] = []
    for n, turn in enumerate(turns):
        session = session_index[session_of(turn["id"])]
        starts_session = n and session != session_index[session_of(turns[n - 1]["id"])]
        if starts_session:
            for question in by_return.get(session, []):
                rows.append(
                    _asked(question, "return", moment_aware(turn["ts"]), event_of, texts, written)
                )
        event = turn_written(turn, person=turn["speaker"] == first_speaker)
        event_of[turn["id"]] = event.pk
        written.append((event.pk, event.actor, texts[turn["id"]]))
        mirror_when_due(turns, n, mirror_every=mirror_every, now=event.ts)
        progress(1)
    end = moment_aware(turns[-1]["ts"])
    full_tokens = estimate_tokens("\n\n".join(f"{actor}: {text}" for _, actor, text in written))
    for question in questions:
        rows.append(_asked(question, "end", end, event_of, texts, written, baselines=True))
    return {
        "conversation": conversation["id"],
        "turns": len(turns),
        "summaries": Summary.objects.count(),
        "full_tokens": full_tokens,
        "rows": rows,
        "seconds": time.perf_counter() - began,
    }


def _asked(
    question: dict,
    moment: str,
    at,
    event_of: dict[str, int],
    texts: dict[str, str],
    written: list[tuple[int, str, str]],
    *,
    baselines: bool = False,
) -> dict:
    """The question put at ``at`` as the person's message, its context measured."""
    evidence = [(event_of[turn_id], texts[turn_id]) for turn_id in question["evidence"]]
    assembly = _assembled(question["question"], at, written)
    row = {
        "category": question["category"],
        "moment": moment,
        **_judged(
            assembly.user_text,
            evidence,
            {name: _plain(text) for name, text in sections_of(assembly.user_text).items()},
        ),
        "tokens": estimate_tokens(assembly.user_text),
        "system_tokens": estimate_tokens(assembly.system_text),
        "cached_tokens": _cached_prefix(assembly.items_included.get("cache", [])),
    }
    if baselines:
        with override_settings(BUDGET_FOUND=0):
            unwoken = _assembled(question["question"], at, written)
        row["unwoken"] = _judged(unwoken.user_text, evidence, {})["strict"]
        row["unwoken_tokens"] = estimate_tokens(unwoken.user_text)
        row["fifo"] = _judged(_fifo(written, row["tokens"]), evidence, {})["strict"]
    return row


def _assembled(message: str, at, written: list[tuple[int, str, str]]):
    """The context for ``message`` at ``at``, its event rolled back after."""
    store = store_of(Event)
    try:
        with transaction.atomic(using=store):
            event = Event.objects.create(ts=at, actor=PERSON, content=untagged(message))
            assembly = context_for_event(
                event=event,
                now=at,
                current_turn=sum(actor == PERSON for _, actor, _ in written) + 1,
                gem=gem_current(),
            )
            raise _Discard
    except _Discard:
        return assembly


def _judged(text: str, evidence: list[tuple[int, str]], parts: dict[str, str]) -> dict:
    """Whether every evidence turn is in ``text`` (strict and loose) and which part held each."""
    plain, words = _plain(text), content_words(text)
    strict = loose = True
    brought = []
    for _, said in evidence:
        turn = _plain(said)
        turn_words = content_words(said)
        held = turn in plain
        near = not turn_words or len(turn_words & words) >= KEPT_SHARE * len(turn_words)
        strict &= held
        loose &= held or near
        brought.append(next((name for name in PARTS if turn in parts.get(name, "")), None))
    return {"strict": strict, "loose": loose, "brought": brought}


def _fifo(written: list[tuple[int, str, str]], tokens: int) -> str:
    """The newest turns of the conversation that fit ``tokens``, oldest first."""
    kept, used = [], 0
    for _, actor, text in reversed(written):
        line = f"{actor}: {text}\n\n"
        cost = estimate_tokens(line)
        if used + cost > tokens:
            break
        kept.append(line)
        used += cost
    return "".join(reversed(kept))


def _cached_prefix(breakpoints: list[dict]) -> int:
    """The tokens up to the last cache breakpoint the model's minimum lets the cache keep."""
    minimum = cache_minimum(settings.CACHE_MINIMUM_TOKENS, settings.HEART_MODEL)
    kept = [point["prefix_tokens"] for point in breakpoints if point["prefix_tokens"] >= minimum]
    return max(kept, default=0)


def cost_share(rows: list[dict]) -> tuple[float, float]:
    """Dollars per turn, on average, at the default model's input prices (the reply's tokens are
    the same either way and left out): everything up to the last cache breakpoint read from the
    cache, a bound on what the cache saves (``bench cache`` replays it); and all uncached."""
    price = for_model(settings.MODEL_PRICES, settings.HEART_MODEL)
    if price is None or not rows:
        return 0.0, 0.0
    cached = uncached = 0.0
    for row in rows:
        sent = row["tokens"] + row["system_tokens"]
        read = min(row["cached_tokens"], sent)
        cached += cost(price, Tokens(input_tokens=sent - read, cache_read_tokens=read))
        uncached += cost(price, Tokens(input_tokens=sent))
    return cached / len(rows), uncached / len(rows)


def _p95(values: list[int]) -> int:
    ordered = sorted(values)
    return ordered[max(0, math.ceil(0.95 * len(ordered)) - 1)] if ordered else 0


def figures_lines(results: list[dict]) -> list[str]:
    """The table the command prints: per moment and category, then the baselines."""
    rows = [row for result in results for row in result["rows"]]
    lines = [
        f"{'moment':<7} {'category':<12} {'questions':>9} {'strict':>7} {'loose':>7} "
        f"{'fifo':>7} {'unwoken':>8} {'mean tok':>8} {'p95 tok':>8}"
    ]
    for moment in MOMENTS:
        for category in (*CATEGORIES, "all"):
            chosen = [
                row
                for row in rows
                if row["moment"] == moment and category in ("all", row["category"])
            ]
            if not chosen:
                continue
            count = len(chosen)
            share = {
                name: sum(row[name] for row in chosen) / count
                for name in ("strict", "loose", *(("fifo", "unwoken") if moment == "end" else ()))
            }
            baseline = (
                f"{share['fifo']:>7.3f} {share['unwoken']:>8.3f}"
                if moment == "end"
                else f"{'':>7} {'':>8}"
            )
            lines.append(
                f"{moment:<7} {category:<12} {count:>9} {share['strict']:>7.3f} "
                f"{share['loose']:>7.3f} {baseline} "
                f"{sum(row['tokens'] for row in chosen) / count:>8.0f} "
                f"{_p95([row['tokens'] for row in chosen]):>8}"
            )
    end = [row for row in rows if row["moment"] == "end"]
    brought: dict[str, int] = {}
    for row in end:
        for part in row["brought"]:
            brought[part or "nowhere"] = brought.get(part or "nowhere", 0) + 1
    total = sum(brought.values()) or 1
    lines.append(
        "evidence turns at the end, by the part that held them: "
        + ", ".join(f"{part} {count / total:.3f}" for part, count in sorted(brought.items()))
    )
    full = sum(result["full_tokens"] for result in results) / max(len(results), 1)
    unwoken = sum(row["unwoken_tokens"] for row in end) / max(len(end), 1)
    cached, uncached = cost_share(end)
    lines.append(
        f"the whole conversation: {full:,.0f} tokens on average; the project without finding: "
        f"{unwoken:,.0f} tokens on average; cost per turn at {settings.HEART_MODEL}'s prices: "
        f"${cached:.5f} if all before the last cache breakpoint were read from the cache (a "
        f"bound: bench cache measures it), ${uncached:.5f} uncached "
        f"({cached / uncached if uncached else 0:.2f}x)"
    )
    return lines
