"""Assembly: what Claude wakes up to, under hard token budgets, given plain data.

Pure: standard library only, no ORM, no settings, no clock. The caller gathers the data
(``heart/context.py``) and passes the budgets in; the same input always gives the same output.

Tokens
    ``estimate_tokens(text)`` is ``ceil(len(text) / 4)`` (0 for empty text; the 4 is
    ``Budgets.chars_per_token``, calibrated from the API's reported usage), the one estimator of
    the project. A section's size is the estimate of its text exactly as sent, heading included.
    Every budget is a hard cap on that: ``estimate_tokens(section) <= budget``, always.

System prompt (static, cacheable)
    The wake text, the image text (only when ``image_text`` is not None, i.e. with an image) and
    the ambient prose, in that order, each stripped, one text block each, separated by a blank
    line (the separator opens the following block). Empty ones are left out. No budgets here.

User message (dynamic): Markdown sections, each a level-2 heading on its own line, in the
order that lets consecutive turns share the longest prefix (see "Prompt caching")::

    ## Summaries     Mirror output           (budget ``summaries``)
    ## Recent        the conversation        (budget: the sum of the four pools)
    ## Lingering     working memory          (budget ``working_memory``)
    ## Recalled      what the message names, then last turn's recalls (budget ``recall``)
    ## Found         old conversation found for the message (budget ``found``)
    ## Now           the time in words
    ## Message       the person's message, verbatim, always last
                     (or ``## Writing first``: why she writes when nobody has, on her own turn)

    Sections are separated by a blank line. One with nothing in it is left out, except Now and
    Message, which are always there. Text inside a section never looks like a heading: a content
    line starting with ``#`` gets a backslash in front (Markdown's escape), and the continuation
    lines of a Lingering item or a Recent line are indented by two spaces.

``## Lingering``
    One line per working-memory item: ``- [feeling] protective``, ``- [desc: hasuki] …``,
    ``- [plan, due Friday 27 November 2026, 5 pm] call the pharmacy`` (the subject after a colon
    when there is one, the due date in words in ``now``'s time zone). Items scoring under 0.01
    are never included. Chosen highest score first (ties: lower id first); an item that does not
    fit in what is left is skipped and smaller ones below it still get their chance. Printed by
    type in the order feeling, thought, pattern, desc, plan, pin, secret (other types after,
    alphabetically), then by id, so the section reads the same from turn to turn while its items
    do not change. Each item left out is listed with its reason: ``faded`` (under 0.01) or
    ``budget`` (its rank by score, its tokens and the tokens left when its turn came).

``## Summaries``
    ``### L1, events 120-180`` then the summary's text, one entry per summary, blank lines between.
    Chosen newest first (by last event, then first event, then id); the first one that does not
    fit ends the choice (so does one that had to be cut), so the summaries reach back without gaps
    from the recent window. Printed oldest first. The caller chooses which summaries stand behind
    Recent (``summaries_behind``). When events between the newest summary and the Recent window
    are covered by none yet (``unsummarised``), the section ends with a line that says so,
    ``### Not summarised yet, events 181-203``, placed before any summary: Claude is told of the
    hole rather than left to miss it.

``## Recalled``
    ``### {key} ({tier})`` then the tier's text, one entry per item, blank lines between, in the
    order given: the fragments the person's message names (woken in this very turn, each saying
    so: ``### lighthouse (recognition, woken by “Lighthouse” in the message)``) and their
    neighbours, then what the companion asked for last turn and its neighbours. An item that
    does not fit in what is left is skipped; later ones still get their chance. The caller's
    trimming is not trusted: the budget is enforced here too.

``## Found``
    Passages of older conversation (and summaries) found for the message, the same way:
    ``### event:412 (found for the message)`` then the passage with its date and speakers, in
    the order given, under a budget of their own.

``## Recent``
    One line per display segment, oldest first: ``luna: hello`` for a person,
    ``claude (say): …`` and ``claude (do): …`` for the companion (``do`` covers narrate too).
    The lines of one event are adjacent; events are separated by a blank line.
    Recent is one window: a contiguous stretch of the conversation ending with the newest
    message. Lines are walked newest first; a line is charged to its own pool (user, say, do +
    narrate) if it fits there, else to flex, the shared overflow, if it fits there, else to what
    is left of flex and the other pools together (what a pool has not used flows to the others).
    The first line that fits none of that ends the window: it and every older line, of every
    pool, are left out, so the pools never reach back further than one another and no reply is
    shown without the message it answered. A line costs the estimate of its rendered text with
    the line break(s) that follow it; on top, the whole section, heading included, never exceeds
    the sum of the pools (so the heading's 3 tokens come out of whatever the pools leave over;
    with every pool filled to the brim, the oldest line gives way).
    The window's start (``recent_window``) is the oldest event all of whose lines are shown:
    when the window ends inside an event, the summaries stand behind the event after it.
    The window is held: given where the last turn's window started (``recent_from``), it starts
    there again while every line since fits the pools, and only grows at its newest end, so its
    older lines stay byte-identical turn after turn and are read from the prompt cache. When
    they no longer fit, it moves on by a block: it starts again where ``RECENT_REFILL_SHARE``
    (two thirds) of each pool holds the newest lines, by the same rules, and grows from there.
    Without ``recent_from`` (the first turn) it is the newest stretch that fits.

``## Now``
    ``It is Sunday 22 November 2026, 5:40 in the morning. Last message 3 hours ago.``
    Morning 5:00-11:59, afternoon 12:00-17:59, evening 18:00-21:59, night 22:00-4:59; exactly
    12:00 is "noon" and 0:00 "midnight". Time since the last message: "moments ago" (under a
    minute), minutes, hours, days (under two weeks), weeks (under 60 days), months (30 days,
    under a year), years. "This is the first message." when there was none before.

``## Message``
    The actor's name and a colon on a line of their own, then the message byte for byte: the
    user message ends with it exactly.

Too big to fit
    An item that could never fit, bigger on its own than its whole (empty) section or, for a
    Recent line that does not fit what is left, than both its whole pool and the whole flex
    pool, is not dropped but cut at a word boundary (mid-word only if not even its first word
    fits) and ends with " …", to fit what is left; if nothing of it fits, it is left out. Its id
    is listed under ``truncated``.

Prompt caching
    Claude's cache works on prefixes and ``cache_control`` marks where one ends; at most four
    breakpoints are allowed, and a request finds an earlier prefix only at a block boundary up to
    20 blocks before one of its breakpoints. We use up to three:

    1. the wake block, when other system blocks follow it (one hour): turns with an image put the
       image text between wake and ambient (the SPEC's order), so without this breakpoint a turn
       with an image and one without would share nothing; with it they share the wake text;
    2. the last system block (one hour): the whole system prompt, identical from turn to turn;
    3. the last block of the conversation (five minutes). Summaries come first, in a block of
       their own, then Recent, one block per event: Recent is held (see above), so the next turn
       sends the same blocks plus the newest events, and finds this turn's prefix at the block
       boundary where it ended (two or three blocks back). What changes every turn comes after
       this breakpoint, in one last block: Lingering (items come and go, scores move), Recalled,
       Now and the Message.

    The caller should put an image block after these text blocks, so it never sits inside the
    cached prefix. ``cache`` lists each breakpoint with its TTL and the estimated tokens of the
    prefix it closes: a prefix under the model's minimum is not cached.

``Assembly``
    ``system`` and ``user``: lists of Messages API text blocks. ``system_text`` and ``user_text``:
    the blocks' texts joined with nothing in between, exactly what was sent.
    ``token_counts``: the estimate of each part as sent (wake, image, ambient and each section
    with its heading; 0 when left out); ``total`` is the estimate of ``system_text`` plus that of
    ``user_text``. ``items_included`` (JSON-ready, for the ContextSnapshot)::

    lingering      ids, as printed            summaries    ids, as printed
    unsummarised   [first, last] event ids the not-summarised line names, or None
    recalled       keys, as printed           recent       {pool: event ids, oldest first}
    recalled_why   {key: why} of the recalled items that came unasked (woken, found beside)
    found          refs of the found passages, as printed
    recent_flex    event ids of lines carried beyond their own pool (by flex or other pools)
    recent_window  {first_event: the window's start, full: ended for want of room or nearly so,
                    held_from: the ``recent_from`` given, moved: the start moved on}
    pool_tokens    {user, say, do, flex: tokens charged}
    truncated      {section: ids (keys for recalled and found, event ids for recent) of cut
                    items}
    dropped        {lingering: over budget, lingering_faded: under 0.01, summaries, recalled,
                    found, recent: {pool: lines dropped}}
    lingering_scores  {id: score} of the items included
    left_out       {lingering: [{id, score, reason, rank, tokens, room}] (the first
                    ``NEAR_MISSES`` cut by the budget; those below in lingering_further: ids),
                    summaries: [{id, reason, rank}], recalled and found: [{key, tier, why,
                    reason, rank, tokens, room}]}
    cache          [{part, block, ttl, prefix_tokens}], one per breakpoint
"""

import math
from collections.abc import Callable, Sequence
from contextlib import suppress
from dataclasses import dataclass
from datetime import datetime, timedelta, tzinfo
from functools import lru_cache, partial
from operator import attrgetter
from typing import NamedTuple

from gem.recalled import RecalledItem
from mirror.merge import Span, summaries_for_context
from silentstar.tokens import (
    DEFAULT_CHARS_PER_TOKEN,
    characters_within,
    estimate_tokens,
    tokens_for_characters,
)
from silentstar.words import counted

LINGER_THRESHOLD = 0.01  # working memory scoring under this is never included
USER, SAY, DO, FLEX = "user", "say", "do", "flex"
POOLS = (USER, SAY, DO)
TYPE_ORDER = ("feeling", "thought", "pattern", "desc", "plan", "pin", "secret")

LINGERING, SUMMARIES, RECALLED = "## Lingering", "## Summaries", "## Recalled"
FOUND = "## Found"
RECENT, NOW, MESSAGE = "## Recent", "## Now", "## Message"
WRITING_FIRST = "## Writing first"
SECTION_GAP = "\n\n"
ELLIPSIS = " …"
UNKNOWN_ACTOR = "unknown"

WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
MONTHS = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)


@dataclass(frozen=True, slots=True)
class Budgets:
    """Hard caps, in estimated tokens, and the characters an estimated token stands for."""

    working_memory: int = 1500
    recall: int = 1000
    found: int = 1000
    summaries: int = 800
    pool_user: int = 1500
    pool_say: int = 1500
    pool_do: int = 1000
    pool_flex: int = 1000
    chars_per_token: float = DEFAULT_CHARS_PER_TOKEN


class LingeringItem(NamedTuple):
    """A working-memory item and its score. A named tuple: a turn makes one for every active
    item, and a tuple is made in a fraction of the time a frozen dataclass takes."""

    id: int
    type: str
    content: str
    subject: str
    score: float
    due: datetime | None


@dataclass(frozen=True, slots=True)
class SummaryItem:
    id: int
    level: str
    first_event_id: int
    last_event_id: int
    content: str


@dataclass(frozen=True, slots=True)
class ConversationLine:
    """One display segment of one event; ``pool`` "narrate" is read as "do"."""

    event_id: int
    ts: datetime
    actor: str
    pool: str  # user | say | do
    text: str

    def __post_init__(self):
        if self.pool == "narrate":
            object.__setattr__(self, "pool", DO)
        elif self.pool not in POOLS:
            raise ValueError(f"Unknown conversation pool {self.pool!r}; expected one of {POOLS}.")


@dataclass(frozen=True, slots=True)
class Assembly:
    system: list[dict]
    user: list[dict]
    system_text: str
    user_text: str
    token_counts: dict[str, int]
    items_included: dict


def working_memory_fill(assembly: Assembly, budget: int) -> float:
    """How full the Lingering section was, 0 to 1: its share of the budget, or 1 when an item
    was cut or left out for want of room (working memory wanted more than it had)."""
    wanted_more = assembly.items_included["dropped"]["lingering"] or assembly.items_included[
        "truncated"
    ].get("lingering")
    if wanted_more or budget <= 0:
        return 1.0 if wanted_more else 0.0
    return min(1.0, assembly.token_counts["lingering"] / budget)


def assemble(
    *,
    wake: str,
    image_text: str | None,
    ambient: str,
    lingering: Sequence[LingeringItem],
    summaries: Sequence[SummaryItem],
    unsummarised: tuple[int, int] | None = None,
    recalled: Sequence[RecalledItem],
    found: Sequence[RecalledItem] = (),
    conversation: Sequence[ConversationLine],
    now: datetime,
    last_message_at: datetime | None,
    message: str,
    actor: str,
    budgets: Budgets,
    recent_from: int | None = None,
    writing_first: str | None = None,
) -> Assembly:
    """Everything Claude receives for one turn; see the module docstring for the rules.

    With ``writing_first`` (a reason in words) nobody has written: the turn is the companion's
    own, and its last section says why she writes first in place of a message."""
    system_parts = {
        "wake": wake.strip(),
        "image": image_text.strip() if image_text is not None else "",
        "ambient": ambient.strip(),
    }
    system_texts = [text for text in system_parts.values() if text]
    # The wake block (when there is one) and the last system block; see "Prompt caching".
    system_breakpoints = (
        {0, len(system_texts) - 1} if system_parts["wake"] else {len(system_texts) - 1}
    )

    truncated: dict[str, list] = {}
    cpt = budgets.chars_per_token
    lingering_text, lingering_scores, lingering_left, lingering_further = _lingering(
        lingering, now, characters_within(budgets.working_memory, cpt), truncated, cpt
    )
    summaries_text, summary_ids, hole_shown, summaries_left = _summaries(
        summaries, unsummarised, characters_within(budgets.summaries, cpt), truncated
    )
    recalled_text, recalled_keys, recalled_left = _recalled(
        RECALLED, recalled, characters_within(budgets.recall, cpt), truncated, cpt
    )
    found_text, found_refs, found_left = _recalled(
        FOUND, found, characters_within(budgets.found, cpt), truncated, cpt
    )
    recent = _recent(conversation, budgets, truncated, held_from=recent_from)
    now_text = f"{NOW}\n{now_in_words(now, last_message_at)}"
    if writing_first is None:
        message_text = f"{MESSAGE}\n{_one_line(actor) or UNKNOWN_ACTOR}:\n{message}"
    else:
        message_text = f"{WRITING_FIRST}\n{writing_first_said(writing_first)}"

    # Summaries, then the conversation a block per event, then what changes every turn.
    held = ([summaries_text] if summaries_text else []) + recent.event_texts
    moving = [text for text in (lingering_text, recalled_text, found_text, now_text) if text]
    user_texts = [*held, SECTION_GAP.join([*moving, message_text])]
    system = _blocks(system_texts, breakpoints=system_breakpoints, ttl="1h")
    user = _blocks(user_texts, breakpoints={len(held) - 1} if held else set())
    system_text = "".join(block["text"] for block in system)
    user_text = "".join(block["text"] for block in user)

    token_counts = {name: estimate_tokens(text, cpt) for name, text in system_parts.items()}
    token_counts |= {
        "lingering": estimate_tokens(lingering_text, cpt),
        "summaries": estimate_tokens(summaries_text, cpt),
        "recalled": estimate_tokens(recalled_text, cpt),
        "found": estimate_tokens(found_text, cpt),
        "recent": estimate_tokens(recent.text, cpt),
        "now": estimate_tokens(now_text, cpt),
        "message": estimate_tokens(message_text, cpt),
        "total": estimate_tokens(system_text, cpt) + estimate_tokens(user_text, cpt),
    }
    faded = sum(1 for item in lingering_left if item["reason"] == FADED)
    items_included = {
        "lingering": list(lingering_scores),
        "lingering_scores": lingering_scores,
        "summaries": summary_ids,
        "unsummarised": list(unsummarised) if hole_shown else None,
        "recalled": recalled_keys,
        "recalled_why": {item.key: item.why for item in recalled if item.why},
        "found": found_refs,
        "recent": recent.event_ids,
        "recent_flex": recent.flex_event_ids,
        "recent_window": {
            **recent.window._asdict(),
            "held_from": recent_from,
            "moved": recent.moved,
        },
        "pool_tokens": recent.pool_tokens,
        "truncated": truncated,
        "dropped": {
            "lingering": len(lingering_left) - faded + len(lingering_further),
            "lingering_faded": faded,
            "summaries": len(summaries) - len(summary_ids),
            "recalled": len(recalled) - len(recalled_keys),
            "found": len(found) - len(found_refs),
            "recent": recent.dropped,
        },
        "left_out": {
            "lingering": lingering_left,
            "lingering_further": lingering_further,
            "summaries": summaries_left,
            "recalled": recalled_left,
            "found": found_left,
        },
        "cache": _breakpoints_described(system, user, cpt),
    }
    if writing_first is not None:
        items_included["writing_first"] = writing_first
    return Assembly(
        system=system,
        user=user,
        system_text=system_text,
        user_text=user_text,
        token_counts=token_counts,
        items_included=items_included,
    )


# What the last section says when the companion writes first, around the reason.
WRITING_FIRST_BEFORE = (
    "No message has come since the last one above: you are writing first, because "
)
WRITING_FIRST_AFTER = " Write to them as yourself, briefly; say why you write if it helps."


def writing_first_said(reason: str) -> str:
    """What the last section says when the companion writes first: no message came, and why."""
    return f"{WRITING_FIRST_BEFORE}{_guard(reason.strip())}{WRITING_FIRST_AFTER}"


def now_in_words(now: datetime, last_message_at: datetime | None) -> str:
    """``It is Sunday 22 November 2026, 5:40 in the morning. Last message 3 hours ago.``"""
    if now.hour == 0 and now.minute == 0:
        clock = "midnight"
    elif now.hour == 12 and now.minute == 0:
        clock = "noon"
    else:
        clock = f"{now.hour % 12 or 12}:{now.minute:02d} {_part_of_day(now.hour)}"
    it_is = f"It is {_date_in_words(now)}, {clock}."
    if last_message_at is None:
        return f"{it_is} This is the first message."
    if (now.tzinfo is None) != (last_message_at.tzinfo is None):
        last_message_at = last_message_at.replace(tzinfo=now.tzinfo)  # read in now's zone
    return f"{it_is} Last message {ago_in_words(now - last_message_at)}."


def ago_in_words(elapsed: timedelta) -> str:
    """``moments ago``, ``12 minutes ago``, ``3 hours ago``, ``2 days ago``…"""
    seconds = max(int(elapsed.total_seconds()), 0)
    days = seconds // 86400
    if seconds < 60:
        return "moments ago"
    if seconds < 3600:
        return counted(seconds // 60, "minute") + " ago"
    if days < 1:
        return counted(seconds // 3600, "hour") + " ago"
    if days < 14:
        return counted(days, "day") + " ago"
    if days < 60:
        return counted(days // 7, "week") + " ago"
    if days < 365:
        return counted(days // 30, "month") + " ago"
    return counted(days // 365, "year") + " ago"


def due_in_words(due: datetime, now: datetime) -> str:
    """``Friday 27 November 2026, 5 pm``, in ``now``'s time zone when both are aware."""
    if due.tzinfo is not None and now.tzinfo is not None:
        # At the very ends of the calendar the conversion overflows: its own wall clock will do.
        with suppress(OverflowError, ValueError):
            due = due.astimezone(now.tzinfo)
    if due.hour == 0 and due.minute == 0:
        clock = "midnight"
    elif due.hour == 12 and due.minute == 0:
        clock = "noon"
    else:
        minutes = f":{due.minute:02d}" if due.minute else ""
        clock = f"{due.hour % 12 or 12}{minutes} {'am' if due.hour < 12 else 'pm'}"
    return f"{_date_in_words(due)}, {clock}"


# --- sections ----------------------------------------------------------------------------------


class _Section:
    """A section being filled: its heading, its items and its size in characters."""

    def __init__(self, heading: str, limit: int, separator: str):
        self.heading = heading
        self.limit = limit  # characters: estimate_tokens(text) <= budget <=> len(text) <= limit
        self.separator = separator
        self.used = len(heading)
        self.count = 0

    def room(self) -> int:
        """Characters left for one more item."""
        return self.limit - self.used - (len(self.separator) if self.count else 1)

    def whole(self) -> int:
        """Characters an item may have in the section when it is alone."""
        return self.limit - len(self.heading) - 1

    def add(self, text: str) -> None:
        self.used += (len(self.separator) if self.count else 1) + len(text)
        self.count += 1

    def place(
        self, render: Callable[[str], str], content: str, rendered: str | None = None
    ) -> tuple[str | None, bool]:
        """The item's text if it goes in (cut when it could never fit whole), and if it was cut.

        ``rendered`` is ``render(content)`` when the caller already has it.
        """
        text = render(content) if rendered is None else rendered
        if len(text) <= self.room():
            return text, False
        if len(text) > self.whole():
            text = _cut(render, content, self.room())
            return text, text is not None
        return None, False

    def text(self, items: list[str]) -> str:
        return f"{self.heading}\n{self.separator.join(items)}" if items else ""


SMALLEST_LINE = len("- [pin] x")


FADED, BUDGET = "faded", "budget"  # why an item was left out: under the floor, or no room
# Items cut by the budget named with their rank and tokens; those below are listed by id only
# (``lingering_further``): a large working memory would otherwise make every snapshot carry,
# and every turn build, a record for each of its items.
NEAR_MISSES = 20


def _lingering(
    items: Sequence[LingeringItem], now: datetime, limit: int, truncated: dict, cpt: float
) -> tuple[str, dict[int, float], list[dict], list[int]]:
    """The section, the included items' scores by id (as printed), the items left out, each
    with its reason (and, for the ``NEAR_MISSES`` first cut by the budget, its rank by score
    among those above the floor, its tokens and the tokens that were left when its turn came),
    and the ids of the items cut further down."""
    left_out = [
        {"id": item.id, "score": round(item.score, 4), "reason": FADED}
        for item in items
        if not item.score >= LINGER_THRESHOLD  # NaN is left out too
    ]
    further: list[int] = []
    eligible = [item for item in items if item.score >= LINGER_THRESHOLD]
    section = _Section(LINGERING, limit, "\n")
    whole, room = section.whole(), section.room()
    chosen: list[tuple[LingeringItem, str]] = []
    near_misses = 0
    # Highest score first, ties by lower id: sorted by id, then (stably) by score.
    by_id = sorted(eligible, key=attrgetter("id"))
    for rank, item in enumerate(sorted(by_id, key=attrgetter("score"), reverse=True), start=1):
        if room < SMALLEST_LINE and near_misses >= NEAR_MISSES:
            further.append(item.id)  # full: nothing more can fit, nor needs its line
            continue
        line = _lingering_line_cached(item.type, item.subject, item.content, item.due, now.tzinfo)
        text, cut = None, False
        if room >= SMALLEST_LINE:
            if len(line) <= room:
                text = line
            elif len(line) > whole:
                render = _lingering_render(item, now)
                text, cut = section.place(render, _clean(item.content), line)
        if text is None:
            # No room for it now, though it would fit an empty section: skipped whole, never
            # cut; smaller items below it still get their chance.
            if near_misses >= NEAR_MISSES:
                further.append(item.id)
                continue
            near_misses += 1
            left_out.append(
                {
                    "id": item.id,
                    "score": round(item.score, 4),
                    "reason": BUDGET,
                    "rank": rank,
                    "tokens": tokens_for_characters(len(line) + 1, cpt),
                    "room": tokens_for_characters(max(room, 0), cpt),
                }
            )
            continue
        section.add(text)
        room = section.room()
        chosen.append((item, text))
        if cut:
            truncated.setdefault("lingering", []).append(item.id)
    chosen.sort(key=lambda pair: (*_type_rank(pair[0].type), pair[0].id))
    text = section.text([text for _, text in chosen])
    return text, {item.id: round(item.score, 4) for item, _ in chosen}, left_out, further


@lru_cache(maxsize=8_192)
def _lingering_line_cached(
    type: str, subject: str, content: str, due: datetime | None, zone: tzinfo | None
) -> str:
    """An item's whole line. Cached: working memory repeats turn after turn, and its line
    depends only on the item and the time zone (due dates are written as calendar dates)."""
    item = LingeringItem(0, type, content, subject, 1.0, due)
    return _lingering_render(item, _ZONE_CLOCK.replace(tzinfo=zone))(_clean(content))


_ZONE_CLOCK = datetime(2000, 1, 1)


def _lingering_render(item: LingeringItem, now: datetime) -> Callable[[str], str]:
    label = _one_line(item.type) or "item"
    if subject := _one_line(item.subject):
        label += f": {subject}"
    if item.due is not None:
        label += f", due {due_in_words(item.due, now)}"
    return lambda content: _guard(_hang(f"- [{label}] ", content))


def _type_rank(type_: str) -> tuple[int, str]:
    return (TYPE_ORDER.index(type_), "") if type_ in TYPE_ORDER else (len(TYPE_ORDER), type_)


def summary_title(level: str, first_event_id: int, last_event_id: int) -> str:
    return f"### {_one_line(level)}, events {first_event_id}-{last_event_id}"


def unsummarised_title(first_event_id: int, last_event_id: int) -> str:
    return f"### Not summarised yet, events {first_event_id}-{last_event_id}"


def summary_entry_tokens(title: str, characters: int, chars_per_token: float) -> int:
    """About what an entry takes of the Summaries budget: its title line, ``characters`` of text
    and the blank line before it (the guard against headings may add a few characters)."""
    text = f"{SECTION_GAP}{title}\n" if characters else f"{SECTION_GAP}{title}"
    return tokens_for_characters(len(text) + characters, chars_per_token)


def summaries_behind(
    spans: Sequence[Span], *, window_first: int, log_first: int | None, budgets: Budgets
) -> tuple[list[Span], tuple[int, int] | None]:
    """The summaries to stand behind a Recent window whose first event is ``window_first``, and
    the events between them and the window that no summary covers yet (None when none).

    ``spans`` are the current summaries, each with ``tokens`` as ``summary_entry_tokens`` counts
    them; ``log_first`` is the log's first event before the window (None when there is none).
    The not-summarised line is kept room for first; the summaries are chosen in what is left
    (``mirror.merge.summaries_for_context``).
    """
    summarised_to = max(
        (s.last_event_id for s in spans if s.first_event_id < window_first), default=None
    )
    first = log_first if summarised_to is None else summarised_to + 1
    hole = (first, window_first - 1) if first is not None and first < window_first else None
    cpt = budgets.chars_per_token
    budget = budgets.summaries - estimate_tokens(SUMMARIES, cpt)
    if hole is not None:
        budget -= summary_entry_tokens(unsummarised_title(*hole), 0, cpt)
    return summaries_for_context(spans, before=window_first, budget=budget), hole


def _summaries(
    items: Sequence[SummaryItem], unsummarised: tuple[int, int] | None, limit: int, truncated: dict
) -> tuple[str, list[int], bool, list[dict]]:
    section = _Section(SUMMARIES, limit, SECTION_GAP)
    hole = None
    if unsummarised is not None:
        title = unsummarised_title(*unsummarised)
        if len(title) <= section.room():
            section.add(title)
            hole = title
    chosen: list[tuple[SummaryItem, str]] = []
    left_out: list[dict] = []
    newest_first = sorted(
        items, key=lambda s: (s.last_event_id, s.first_event_id, s.id), reverse=True
    )
    stopped = False  # never leave a gap: older summaries do not jump over one that did not fit
    for rank, summary in enumerate(newest_first, start=1):
        text, cut = None, False
        if not stopped:
            title = summary_title(summary.level, summary.first_event_id, summary.last_event_id)
            text, cut = section.place(_entry_render(title), _clean(summary.content))
        if text is None:
            stopped = True
            left_out.append({"id": summary.id, "reason": BUDGET, "rank": rank})
            continue
        section.add(text)
        chosen.append((summary, text))
        if cut:
            truncated.setdefault("summaries", []).append(summary.id)
            stopped = True  # it took what was left
    chosen.sort(key=lambda pair: (pair[0].first_event_id, pair[0].last_event_id, pair[0].id))
    texts = [text for _, text in chosen] + ([hole] if hole else [])
    return (
        section.text(texts),
        [summary.id for summary, _ in chosen],
        hole is not None,
        left_out,
    )


def _recalled(
    heading: str, items: Sequence[RecalledItem], limit: int, truncated: dict, cpt: float
) -> tuple[str, list[str], list[dict]]:
    """The Recalled section, or the Found one (``heading``): each item in the order given, while
    it fits."""
    section = _Section(heading, limit, SECTION_GAP)
    name = heading.removeprefix("## ").lower()
    texts: list[str] = []
    keys: list[str] = []
    left_out: list[dict] = []
    for rank, item in enumerate(items, start=1):
        said = ", ".join(_one_line(part) for part in (item.tier, item.why) if part)
        title = f"### {_one_line(item.key)} ({said})"
        text, cut = section.place(_entry_render(title), _clean(item.text))
        if text is None:
            left_out.append(
                {
                    "key": item.key,
                    "tier": item.tier,
                    "why": item.why,
                    "reason": BUDGET,
                    "rank": rank,
                    "tokens": tokens_for_characters(len(title) + len(item.text) + 3, cpt),
                    "room": tokens_for_characters(max(section.room(), 0), cpt),
                }
            )
            continue
        section.add(text)
        texts.append(text)
        keys.append(item.key)
        if cut:
            truncated.setdefault(name, []).append(item.key)
    return section.text(texts), keys, left_out


def _entry_render(title: str) -> Callable[[str], str]:
    return lambda content: f"{title}\n{_guard(content)}" if content else title


@dataclass
class _Recent:
    text: str
    event_texts: list[str]  # each event's lines, oldest first; the first opens with the heading
    event_ids: dict[str, list[int]]
    flex_event_ids: list[int]
    pool_tokens: dict[str, int]
    dropped: dict[str, int]
    window: "RecentWindow"
    moved: bool  # the window's start moved on this turn (it was not held)


class RecentWindow(NamedTuple):
    """Where the Recent window starts, and whether it is (nearly) full.

    ``first_event`` is the oldest event every line of which Recent shows (None when it shows
    none): the summaries stand for what lies before it. ``full`` says the window ended for want
    of room, or has less than ``NEAR_FULL_SHARE`` of its budget left: coming turns will push
    its oldest lines out.
    """

    first_event: int | None
    full: bool


NEAR_FULL_SHARE = 0.25  # a window with less than this share of its budget left is nearly full
# When the window must move, it starts again where this share of the pools holds the newest
# lines: it then grows by whole turns until full, and its older part stays byte-identical (and
# read from the prompt cache) all the while.
RECENT_REFILL_SHARE = 2 / 3


def recent_window(
    lines: Sequence[ConversationLine], budgets: Budgets, *, held_from: int | None = None
) -> RecentWindow:
    """The window the Recent section of ``assemble`` shows for these lines and budgets."""
    return _recent(lines, budgets, {}, held_from=held_from).window


def _recent(
    lines: Sequence[ConversationLine],
    budgets: Budgets,
    truncated: dict,
    *,
    held_from: int | None = None,
) -> _Recent:
    """The Recent section: the newest stretch that fits the pools; given where the last turn's
    window started (``held_from``), held there while everything since fits, and moved on by a
    block (to where ``RECENT_REFILL_SHARE`` of the pools holds the newest lines) when not."""
    caps = _pool_caps(budgets)
    walk = _recent_walk(lines, caps, budgets)
    if held_from is None or not lines or held_from > lines[-1].event_id:
        return _recent_made(lines, walk, caps, truncated, moved=False)
    held = _recent_walk([line for line in lines if line.event_id >= held_from], caps, budgets)
    if held.ended_at is None:
        return _recent_made(lines, held, caps, truncated, moved=False)
    refill = {pool: math.floor(cap * RECENT_REFILL_SHARE) for pool, cap in caps.items()}
    start = _recent_walk(lines, refill, budgets).first_whole_event()
    if start is not None:
        walk = _recent_walk([line for line in lines if line.event_id >= start], caps, budgets)
    return _recent_made(lines, walk, caps, truncated, moved=True)


def _pool_caps(budgets: Budgets) -> dict[str, int]:
    return {
        USER: max(budgets.pool_user, 0),
        SAY: max(budgets.pool_say, 0),
        DO: max(budgets.pool_do, 0),
        FLEX: max(budgets.pool_flex, 0),
    }


@dataclass
class _Walk:
    kept: list[tuple[ConversationLine, str, dict[str, int]]]  # line, text, tokens by pool
    left: dict[str, int]
    ended_at: ConversationLine | None  # the newest line left out for want of room
    cut: list[int]  # event ids of lines cut to fit

    def first_whole_event(self) -> int | None:
        """The oldest event every line of which was kept."""
        if not self.kept:
            return None
        first = self.kept[0][0].event_id
        if self.ended_at is not None and self.ended_at.event_id == first:
            return next((line.event_id for line, _, _ in self.kept if line.event_id != first), None)
        return first


def _recent_walk(
    lines: Sequence[ConversationLine], caps: dict[str, int], budgets: Budgets
) -> _Walk:
    """Lines newest first into the pools until one fits none of them (see the docstring)."""
    left = dict(caps)
    cpt = budgets.chars_per_token
    limit = characters_within(sum(caps.values()), cpt)  # the whole section, in characters
    used = len(RECENT)
    kept: list[tuple[ConversationLine, str, dict[str, int]]] = []
    ended_at: ConversationLine | None = None
    cut: list[int] = []
    for line in reversed(lines):
        label, content, text = _recent_line(line.actor, line.pool, line.text)
        # A line pays for its text and for the line break(s) after it (after the heading, for the
        # newest line), so the pools account for every character of the section but its heading.
        joint = 1 if not kept or kept[-1][0].event_id == line.event_id else 2
        room = limit - used - joint
        cost = tokens_for_characters(joint + len(text), cpt)
        if len(text) > room or cost > sum(left.values()):
            whole = min(
                characters_within(max(caps[line.pool], caps[FLEX]), cpt) - joint,
                limit - len(RECENT) - 1,
            )
            if len(text) <= whole:
                ended_at = line  # it would fit a window that began later: the window ends here
                break
            # It could never fit its pool nor flex whole: cut it to what is left.
            render = partial(_recent_render, label)
            text = _cut(
                render, content, min(room, characters_within(sum(left.values()), cpt) - joint)
            )
            if text is None:
                ended_at = line
                break
            cut.append(line.event_id)
            cost = tokens_for_characters(joint + len(text), cpt)
        charges = _charge(left, line.pool, cost)
        used += joint + len(text)
        kept.append((line, text, charges))

    kept.reverse()
    person = next((n for n, (line, _, _) in enumerate(kept) if line.pool == USER), None)
    if person and ended_at is not None:
        # Replies older than the oldest message shown answer a message that is not there: a window
        # cut short opens with a message of the person (what they took goes back to the pools).
        for _, _, charges in kept[:person]:
            for pool, taken in charges.items():
                left[pool] += taken
        dropped_ids = {line.event_id for line, _, _ in kept[:person]}
        cut = [event_id for event_id in cut if event_id not in dropped_ids]
        ended_at, kept = kept[person - 1][0], kept[person:]
    return _Walk(kept, left, ended_at, cut)


def _recent_made(
    lines: Sequence[ConversationLine],
    walk: _Walk,
    caps: dict[str, int],
    truncated: dict,
    *,
    moved: bool,
) -> _Recent:
    kept = walk.kept
    if walk.cut:
        truncated.setdefault("recent", []).extend(sorted(set(walk.cut)))
    event_texts: list[str] = []
    for index, (line, text, _) in enumerate(kept):
        if index and kept[index - 1][0].event_id == line.event_id:
            event_texts[-1] += "\n" + text
        else:
            event_texts.append(text)
    if event_texts:
        event_texts[0] = f"{RECENT}\n{event_texts[0]}"
    event_ids = {
        pool: list(dict.fromkeys(line.event_id for line, _, _ in kept if line.pool == pool))
        for pool in POOLS
    }
    dropped = dict.fromkeys(POOLS, 0)
    for line in lines[: len(lines) - len(kept)]:  # the window is the lines' newest stretch
        dropped[line.pool] += 1
    full = walk.ended_at is not None or sum(walk.left.values()) < NEAR_FULL_SHARE * sum(
        caps.values()
    )
    return _Recent(
        text=SECTION_GAP.join(event_texts),
        event_texts=event_texts,
        event_ids=event_ids,
        flex_event_ids=list(
            dict.fromkeys(line.event_id for line, _, charges in kept if set(charges) - {line.pool})
        ),
        pool_tokens={pool: caps[pool] - walk.left[pool] for pool in (*POOLS, FLEX)},
        dropped=dropped,
        window=RecentWindow(walk.first_whole_event(), full),
        moved=moved,
    )


def _charge(left: dict[str, int], pool: str, cost: int) -> dict[str, int]:
    """Take ``cost`` tokens from the line's own pool if it holds them, else from flex if it does,
    else from what is left in flex and the other pools (what a pool has not used flows to the
    others, as flex does); what was taken, by pool."""
    for single in (pool, FLEX):
        if cost <= left[single]:
            left[single] -= cost
            return {single: cost}
    charges = {}
    for source in (pool, FLEX, *(other for other in POOLS if other != pool)):
        if taken := min(cost, left[source]):
            left[source] -= taken
            charges[source] = taken
            cost -= taken
    return charges


@lru_cache(maxsize=8_192)
def _recent_line(actor: str, pool: str, text: str) -> tuple[str, str, str]:
    """A Recent line's label, cleaned content and whole text. Cached: the same lines come back
    turn after turn, and the text depends on nothing else."""
    label = _one_line(actor) or UNKNOWN_ACTOR
    label += ": " if pool == USER else f" ({pool}): "
    content = _clean(text)
    return label, content, _recent_render(label, content)


def _recent_render(label: str, content: str) -> str:
    return _guard(_hang(label, content))


# --- text helpers ------------------------------------------------------------------------------


def _blocks(texts: list[str], *, breakpoints: set[int], ttl: str | None = None) -> list[dict]:
    """Text blocks; every block after the first opens with the blank line that separates it."""
    blocks = []
    for index, text in enumerate(texts):
        block: dict = {"type": "text", "text": SECTION_GAP + text if index else text}
        if index in breakpoints:
            block["cache_control"] = {"type": "ephemeral", **({"ttl": ttl} if ttl else {})}
        blocks.append(block)
    return blocks


def _breakpoints_described(system: list[dict], user: list[dict], cpt: float) -> list[dict]:
    """Each breakpoint: where it is (``system`` or ``user`` and the block's index), its TTL and
    the estimated tokens of the prefix it closes (what the cache keeps, if the model's minimum
    allows)."""
    described, characters = [], 0
    for part, blocks in (("system", system), ("user", user)):
        for index, block in enumerate(blocks):
            characters += len(block["text"])
            if control := block.get("cache_control"):
                described.append(
                    {
                        "part": part,
                        "block": index,
                        "ttl": control.get("ttl", "5m"),
                        "prefix_tokens": tokens_for_characters(characters, cpt),
                    }
                )
    return described


def _clean(text: str) -> str:
    """Stripped, every kind of line break made ``\\n``, trailing spaces of lines removed."""
    return "\n".join(line.rstrip() for line in text.strip().splitlines())


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _hang(label: str, content: str) -> str:
    """``label`` then the content, its continuation lines indented by two spaces."""
    first, *rest = content.split("\n")
    return "\n".join([f"{label}{first}".rstrip(), *(f"  {line}" if line else "" for line in rest)])


def _guard(text: str) -> str:
    """A backslash before the ``#`` that opens a line, so no content line reads as a heading."""
    lines = text.split("\n")
    for index, line in enumerate(lines):
        stripped = line.lstrip(" \t")
        if stripped.startswith("#"):
            lines[index] = f"{line[: len(line) - len(stripped)]}\\{stripped}"
    return "\n".join(lines)


def _cut(render: Callable[[str], str], content: str, room: int) -> str | None:
    """The longest rendering of the content's start, plus " …", in ``room`` characters.

    Cut at a word boundary; mid-word only when not even the first word fits. None when nothing
    fits. Relies on the rendered length never shrinking as the content grows.
    """

    def at(end: int) -> str:
        return render(content[:end].rstrip() + ELLIPSIS)

    if len(content) < 2 or len(at(1)) > room:
        return None
    low, high = 1, len(content) - 1
    while low < high:
        middle = (low + high + 1) // 2
        if len(at(middle)) <= room:
            low = middle
        else:
            high = middle - 1
    end = low
    while end > 0 and not content[end].isspace():
        end -= 1
    return at(end if end > 0 else low)


def _date_in_words(moment: datetime) -> str:
    return f"{WEEKDAYS[moment.weekday()]} {moment.day} {MONTHS[moment.month - 1]} {moment.year}"


def _part_of_day(hour: int) -> str:
    if 5 <= hour < 12:
        return "in the morning"
    if 12 <= hour < 18:
        return "in the afternoon"
    if 18 <= hour < 22:
        return "in the evening"
    return "at night"
