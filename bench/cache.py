"""``python -m bench cache``: how much of the Heart's input Claude's prompt cache holds.

A stretch of one real conversation (a dataset in the evaluation harness's format,
``bench/evaluate.py``) is replayed through the real turn pipeline, in stores that hold nothing
else, against the fake Messages API (``bench/fakeapi.py``) through the real SDK, the fake
applying the prompt cache's rules (``bench/promptcache.py``) on a simulated clock:

- The conversation's first speaker is the person (``luna``): each run of their lines is one
  message, sent as the chat page sends it (``user_text_compose``, then ``turn_submit`` with
  ``at=`` the simulated moment), and answered at once (``turn_claim_next``, ``turn_run``). The
  other speaker's next run of lines is the companion's reply: the fake answers it in ``<say>``.
  A ``<`` that could open a tag gets a space after it (``bench.continuity.untagged``).
- Messages come one to four minutes apart, with a pause before one message in every
  ``TURNS_PER_PAUSE`` (at least one): a short break of 5 to 15 minutes or time away of 30 to 90,
  as likely one as the other, all drawn from the seed.
- ``TAGGED`` of the person's lines in the first quarter of the replay (or its first six),
  drawn from the seed, are sent tagged as the chat's tag buttons tag them (plans and pins), so
  Lingering has items.
- After each turn the Mirror runs if its trigger fires (``mirror_run`` at the reply's moment),
  offline: its passes are answered by the offline Mirror (``mirror/offline.py``), exactly what
  it writes when no key is set, and never reach the fake, so the fake sees the Heart's calls
  alone (and whatever ``idle`` sends).
- Between a reply and the next message ``idle`` (when given) is called at each whole simulated
  minute, the clock set there: the place for whatever keeps the cache warm during pauses. What
  it sends is counted apart and added to the cost.

The cache keeps prefixes of at least ``minimum`` tokens for the Heart's model
(``settings.HEART_MODEL``). The figures are the fake's usage of each call, as the API reports
it, and their cost at the model's prices (``silentstar.pricing``), beside the same calls priced
with no cache at all (every input token at the base input price).
"""

import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from itertools import pairwise

from django.conf import settings
from django.test import override_settings

from bench.continuity import untagged
from bench.fakeapi import FakeMessagesAPI, FakeReply, online
from bench.promptcache import PromptCache
from events.models import Event
from heart.models import ContextSnapshot
from heart.services import turn_claim_next, turn_run, turn_submit, user_text_compose
from mirror.models import Summary
from mirror.run import mirror_run
from silentstar.pricing import PRICES, Price, Tokens, cost, for_model

PERSON = "luna"
START = datetime(2026, 11, 2, 17, 0, tzinfo=UTC)  # the simulated clock's first message
GAP_SECONDS = (60, 240)  # between two messages
# A longer pause is a short break or time away, as likely one as the other: the cache forgets a
# prefix five minutes after it was last read, so the two cost differently.
PAUSE_MINUTES = ((5, 15), (30, 90))
TURNS_PER_PAUSE = 25
TAGGED = ("plan", "pin", "plan", "pin", "plan", "pin")  # the tags given to the person's lines
EXCERPT_CHARACTERS = 60

Idle = Callable[[datetime], None]


@dataclass(frozen=True)
class Exchange:
    message: str  # the person's words
    reply: str  # the companion's


@dataclass(frozen=True)
class Script:
    """When each message is sent, which come after a pause, and which are tagged."""

    at: list[datetime]
    pauses: dict[int, float]  # message index → minutes of pause before it
    tags: dict[int, str]  # message index → knowledge tag


class SimulatedClock:
    """The moment the replay is at; ``seconds`` is the prompt cache's clock."""

    def __init__(self, now: datetime) -> None:
        self.now = now

    def seconds(self) -> float:
        return self.now.timestamp()


def exchanges_of(conversation: dict) -> tuple[list[Exchange], str, str]:
    """The conversation as the person's messages and the companion's replies, with the names of
    both speakers: each run of the first speaker's lines, then the other's next run (lines
    joined by a line break). A last message with no reply is left out."""
    runs: list[tuple[str, list[str]]] = []
    for turn in conversation["turns"]:
        if runs and runs[-1][0] == turn["speaker"]:
            runs[-1][1].append(turn["text"])
        else:
            runs.append((turn["speaker"], [turn["text"]]))
    person = runs[0][0] if runs else ""
    companion = next((speaker for speaker, _ in runs if speaker != person), "")
    exchanges = [
        Exchange("\n".join(said), "\n".join(answer))
        for (speaker, said), (_, answer) in pairwise(runs)
        if speaker == person
    ]
    return exchanges, person, companion


def script_of(count: int, *, seed: int) -> Script:
    """The replay's times, pauses and tags for ``count`` messages, drawn from ``seed``."""
    rng = random.Random(seed)
    pauses = {
        index: rng.uniform(*rng.choice(PAUSE_MINUTES))
        for index in sorted(rng.sample(range(1, count), min(count - 1, _pauses(count))))
    }
    at, moment = [], START
    for index in range(count):
        if index:
            seconds = pauses[index] * 60 if index in pauses else rng.uniform(*GAP_SECONDS)
            moment += timedelta(seconds=seconds)
        at.append(moment)
    early = range(max(count // 4, min(count, len(TAGGED))))
    tagged = sorted(rng.sample(early, min(len(TAGGED), len(early))))
    return Script(at=at, pauses=pauses, tags=dict(zip(tagged, TAGGED, strict=False)))


def _pauses(count: int) -> int:
    return max(1, round(count / TURNS_PER_PAUSE))


@dataclass
class Tally:
    """Usage of a set of calls, as the API reported it, added up."""

    requests: int = 0
    tokens: Tokens = field(default_factory=Tokens)

    def add(self, usages: Sequence[dict]) -> None:
        for usage in usages:
            split = usage.get("cache_creation") or {}
            self.requests += 1
            self.tokens.add(
                Tokens(
                    input_tokens=usage["input_tokens"],
                    output_tokens=usage["output_tokens"],
                    cache_read_tokens=usage["cache_read_input_tokens"],
                    cache_write_5m_tokens=split.get("ephemeral_5m_input_tokens", 0),
                    cache_write_1h_tokens=split.get("ephemeral_1h_input_tokens", 0),
                )
            )

    def figures(self, price: Price) -> dict:
        """The counts, their cost, and the cost of the same calls with no cache: every input
        token at the base input price."""
        tokens = self.tokens
        uncached = Tokens(input_tokens=tokens.sent_tokens, output_tokens=tokens.output_tokens)
        return {
            "requests": self.requests,
            "read": tokens.cache_read_tokens,
            "written_5m": tokens.cache_write_5m_tokens,
            "written_1h": tokens.cache_write_1h_tokens,
            "uncached": tokens.input_tokens,
            "output": tokens.output_tokens,
            "cost": cost(price, tokens),
            "cost_uncached": cost(price, uncached),
        }


def model_price(model: str) -> Price:
    price = for_model(PRICES, model)
    if price is None:
        raise ValueError(f"silentstar.pricing has no price for {model!r}")
    return price


def cache_replay(
    *,
    exchanges: Sequence[Exchange],
    minimum: int,
    seed: int,
    idle: Idle | None = None,
    progress: Callable[[], None] = lambda: None,
) -> dict:
    """Replay ``exchanges`` in the (empty) stores with a cache keeping prefixes of ``minimum``
    tokens and more; the figures of the Heart's calls, and of those ``idle`` made."""
    began = time.perf_counter()
    model = settings.HEART_MODEL
    price = model_price(model)
    script = script_of(len(exchanges), seed=seed)
    clock = SimulatedClock(START)
    heart, idled = Tally(), Tally()
    mirror_runs = 0
    answer = [""]
    cache = PromptCache({model: minimum}, clock=clock.seconds)
    with FakeMessagesAPI(cache=cache) as api, online(api):
        api.responder = lambda body: FakeReply(f"<say>{answer[0]}</say>")
        replied_at = None
        for index, exchange in enumerate(exchanges):
            at = script.at[index]
            if replied_at is not None and idle is not None:
                idled.add(_idle_until(at, since=replied_at, clock=clock, idle=idle, api=api))
            clock.now = at
            answer[0] = untagged(exchange.reply)
            tags = [script.tags[index]] if index in script.tags else []
            text = user_text_compose(
                message=untagged(exchange.message), identity=PERSON, knowledge_tags=tags
            )
            before = len(api.usages)
            turn_submit(text=text, actor=PERSON, at=at, enqueue=False)
            claimed = turn_claim_next()
            if claimed is None:
                raise RuntimeError(f"turn {index + 1} was not queued")
            finished = turn_run(turn=claimed)
            if finished.status != "done":
                raise RuntimeError(f"turn {index + 1} failed: {finished.error}")
            heart.add(api.usages[before:])
            replied_at = Event.objects.get(pk=finished.reply_event_id).ts
            with override_settings(COMPANION_OFFLINE=True):
                mirror_runs += mirror_run(now=replied_at) is not None
            progress()
    included = list(
        ContextSnapshot.objects.order_by("turn").values_list("items_included", flat=True)
    )
    with_summaries = [n for n, items in enumerate(included, 1) if items["summaries"]]
    return {
        "turns": len(exchanges),
        "minimum": minimum,
        "model": model,
        "price": {"input": price.input, "output": price.output},
        "seed": seed,
        "pauses": [[index + 1, round(minutes)] for index, minutes in script.pauses.items()],
        "tagged": [
            [index + 1, tag, _excerpt(exchanges[index].message)]
            for index, tag in script.tags.items()
        ],
        "heart": heart.figures(price),
        "idle": idled.figures(price),
        "mirror_runs": mirror_runs,
        "summaries": Summary.objects.count(),
        "turns_with_summaries": len(with_summaries),
        "summaries_from_turn": with_summaries[0] if with_summaries else None,
        "turns_with_lingering": sum(bool(items["lingering"]) for items in included),
        "seconds": time.perf_counter() - began,
    }


def _idle_until(
    until: datetime, *, since: datetime, clock: SimulatedClock, idle: Idle, api: FakeMessagesAPI
) -> list[dict]:
    """``idle`` at each whole minute after ``since`` and before ``until``; the usages of what it
    sent."""
    before = len(api.usages)
    moment = since + timedelta(minutes=1)
    while moment < until:
        clock.now = moment
        idle(moment)
        moment += timedelta(minutes=1)
    return api.usages[before:]


def _excerpt(text: str) -> str:
    flat = " ".join(text.split())
    if len(flat) <= EXCERPT_CHARACTERS:
        return flat
    return flat[: EXCERPT_CHARACTERS - 1].rstrip() + "…"


def shares(result: dict) -> dict:
    """The figures of one replay, per turn and as shares of the input (the idle calls' cost
    counted in the cost per turn)."""
    heart, idled, turns = result["heart"], result["idle"], result["turns"]
    whole = heart["read"] + heart["written_5m"] + heart["written_1h"] + heart["uncached"]
    share = (lambda part: part / whole) if whole else (lambda part: 0.0)
    return {
        "minimum": result["minimum"],
        "read_share": share(heart["read"]),
        "written_share": share(heart["written_5m"] + heart["written_1h"]),
        "uncached_share": share(heart["uncached"]),
        "input_per_turn": whole / turns,
        "cost_per_turn": (heart["cost"] + idled["cost"]) / turns,
        "cost_per_turn_uncached": heart["cost_uncached"] / turns,
    }


def figures_lines(
    results: list[dict], *, conversation: str, person: str, companion: str
) -> list[str]:
    """What the command prints: the replay, then a row per cache minimum."""
    first = results[0]
    price = first["price"]
    lines = [
        f"{conversation}, {first['turns']} turns: {person} is the person ({PERSON}), "
        f"{companion}'s next lines the companion's replies; seed {first['seed']}",
        f"model {first['model']} at ${price['input']:g} input and ${price['output']:g} output "
        "per million tokens (silentstar.pricing); the Heart's calls only, the Mirror offline",
        "messages 1-4 minutes apart; pauses before "
        + ", ".join(f"turn {turn} ({minutes} min)" for turn, minutes in first["pauses"]),
        "tagged by the person: "
        + "; ".join(f"turn {turn} {tag}: “{text}”" for turn, tag, text in first["tagged"]),
        f"Mirror runs {first['mirror_runs']}, summaries {first['summaries']}; summaries in the "
        f"context on {first['turns_with_summaries']} turns (from turn "
        f"{first['summaries_from_turn']}), Lingering on {first['turns_with_lingering']}",
        "",
        f"{'minimum':>8} {'warm':>5} {'read':>7} {'written':>8} {'uncached':>9} "
        f"{'input/turn':>11} {'$/turn':>9} {'no cache':>9} {'ratio':>6} {'idle calls':>10}",
    ]
    for result in results:
        row = shares(result)
        uncached_cost = row["cost_per_turn_uncached"]
        ratio = row["cost_per_turn"] / uncached_cost if uncached_cost else 0.0
        warm = "on" if result.get("keep_warm") else "off"
        lines.append(
            f"{row['minimum']:>8,} {warm:>5} {row['read_share']:>7.1%} "
            f"{row['written_share']:>8.1%} {row['uncached_share']:>9.1%} "
            f"{row['input_per_turn']:>11,.0f} {row['cost_per_turn']:>9.5f} "
            f"{uncached_cost:>9.5f} {ratio:>6.2f} {result['idle']['requests']:>10}"
        )
    lines.append(
        "read, written, uncached: shares of the Heart's input tokens; input/turn: tokens sent "
        "per turn; $/turn: US dollars per turn with the cache (the keep-warm calls included), "
        "and the same calls with none; ratio: the one over the other; warm: "
        "SILENTSTAR_CACHE_KEEP_WARM"
    )
    return lines
