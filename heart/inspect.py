"""Why she knew what she knew: a turn's context, read back for a person.

Every answered turn keeps a ``ContextSnapshot``: the exact text Claude received, each part's
estimated tokens and what ``heart.assemble`` decided (``items_included``: what went in, what
was left out and why, where the prompt cache's breakpoints are) with the ``inputs`` it was
assembled from. ``turn_inspection`` reads the rows the snapshot names (working memory,
summaries, fragments, events) and says every decision in words; the Anvil's context inspector
(``anvil/inspector.py``) and ``manage.py inspect`` show what it returns.

Left out, and why (``LeftOut.reason``):

- working memory under the floor: ``under the 0.01 floor (score 0.004)``;
- working memory, a summary or a recalled fragment with no room left:
  ``cut by the budget at rank 7 (needed 42 tokens, 12 left)``; a timed plan cut while it sat
  at its floor is said to be submerged first;
- working memory that left before the turn (since the turn before, or shown by it):
  ``not active: resolved``;
- summaries the turn did not stand behind Recent: superseded by a coarser one, overlapping
  Recent, covered by a summary shown, or further back than the budget reached;
- what the message named that the recall budget had no room for: its reason (``woken by
  “lighthouse” in the message``) with the budget's sentence;
- the fragments the ambient prose names that were not woken nor recalled: ``not recalled: …``;
- old conversation found for the message with no room left in the Found budget;
- the events before Recent's window: how many, and which of them the summaries cover.

Snapshots taken before these records were kept have only the counts of what was dropped:
``Inspection.missing`` says what the page cannot tell for them. Budgets are not kept with a
snapshot: they are read from the settings as they are now.
"""

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

from django.conf import settings
from django.db.models import Count, Max, Min, Q
from django.utils import timezone

from events.corrected import DONE
from events.models import Correction, Event, Turn, TurnStatus
from gem.decay import (
    FLOOR_THRESHOLD,
    PLAN,
    PLAN_RESURFACE_HOURS,
    hidden_plan_surfaces,
    plan_phases,
)
from gem.models import Fragment, WorkingMemory, WorkingMemoryStatus
from gem.selectors import AMBIENT_KEY
from heart.assemble import (
    FOUND,
    LINGERING,
    MESSAGE,
    NOW,
    RECALLED,
    RECENT,
    SUMMARIES,
    due_in_words,
)
from heart.context import ContextInputs, budgets_from_settings
from heart.models import ContextSnapshot
from mirror.models import Summary
from silentstar.pricing import cache_minimum
from silentstar.words import counted

HEADINGS = (LINGERING, SUMMARIES, RECALLED, FOUND, RECENT, NOW, MESSAGE)
SECTION_NAMES = tuple(heading.removeprefix("## ") for heading in HEADINGS)
SYSTEM = "System"
OFFLINE_MODEL = "offline"
# Items that left working memory this long before a turn with no turn before it are named.
LEFT_RECENTLY = timedelta(days=1)
LISTED_AT_MOST = 20  # summaries of one kind listed as left out; the rest are counted


@dataclass(frozen=True)
class Bar:
    """A part of the context: its estimated tokens and its budget (None: it has none)."""

    name: str
    tokens: int
    budget: int | None = None

    @property
    def share(self) -> float | None:
        if self.budget is None:
            return None
        return self.tokens / self.budget if self.budget else (1.0 if self.tokens else 0.0)

    @property
    def percent(self) -> int | None:
        share = self.share
        return None if share is None else round(100 * share)

    @property
    def percent_text(self) -> str:
        """``60%``; ``under 1%`` for a share that rounds to nothing but is not nothing."""
        if self.percent == 0 and self.tokens:
            return "under 1%"
        return f"{self.percent}%"


@dataclass(frozen=True)
class LingeringShown:
    id: int
    type: str
    subject: str
    content: str
    score: float | None  # None: the snapshot is older than the scores it keeps
    due: datetime | None
    cut: bool
    found: bool  # the row is still in working memory


@dataclass(frozen=True)
class SummaryShown:
    id: int
    level: str
    first_event_id: int | None
    last_event_id: int | None
    content: str
    cut: bool
    found: bool


@dataclass(frozen=True)
class RecalledShown:
    key: str
    tier: str
    text: str
    cut: bool
    link: tuple[str, str] | None  # (kind, id): fragment, event or working memory
    why: str = ""  # what brought it unasked: "woken by “lighthouse” in the message"


@dataclass(frozen=True)
class RecentShown:
    """The conversation's window: the events it shows, by pool, and how it moved."""

    first_event_id: int | None
    last_event_id: int | None
    events: int
    pools: dict[str, int]  # events with a line in each pool
    flex: int  # events with a line carried beyond its own pool
    cut: list[int]
    window_first: int | None
    full: bool | None
    held_from: int | None
    moved: bool | None

    @property
    def movement(self) -> str:
        if self.moved is None:
            return ""
        if self.moved:
            return (
                f"The window moved on this turn: it was held from event {self.held_from} and "
                f"now starts at event {self.window_first}."
            )
        if self.held_from is not None:
            return f"The window was held from event {self.held_from}, where the turn before had it."
        return "The window starts where the conversation's newest events fill it."


@dataclass(frozen=True)
class CorrectionShown:
    """A correction of an event of the turn's conversation (its window, its message, its
    reply), made before the context was assembled (which read it) or since (what was sent is
    as the event stood then)."""

    event_id: int
    kind: str
    made_by: str
    when: str
    since: bool

    @property
    def sentence(self) -> str:
        then = (
            "after this turn: what was sent holds the message as it stood then"
            if self.since
            else "before this turn: the context read it as corrected"
        )
        return f"{DONE[self.kind]} by {self.made_by}, {self.when}; {then}."


@dataclass(frozen=True)
class LeftOut:
    """Something that could have been in the context and was not, and why, in words."""

    section: str
    label: str
    reason: str
    link: tuple[str, str] | None = None  # (kind, id) of the row, for a page to link


@dataclass(frozen=True)
class Breakpoint:
    """A ``cache_control`` breakpoint: the prefix it closes and whether the cache keeps it."""

    part: str
    block: int
    ttl: str
    prefix_tokens: int
    where: str
    minimum: int

    @property
    def cached(self) -> bool:
        return self.prefix_tokens >= self.minimum

    @property
    def sentence(self) -> str:
        kept = "1 hour" if self.ttl == "1h" else "5 minutes"
        if self.cached:
            return f"cached for {kept}"
        return f"under the model's minimum of {self.minimum:,}: not cached"


@dataclass(frozen=True)
class CacheUse:
    """The prompt cache as the turn's call to Claude reported it."""

    model: str
    minimum_model: str  # the model whose minimum the breakpoints are held against
    minimum: int
    offline: bool
    read: int | None
    written: int | None
    uncached: int | None

    @property
    def recorded(self) -> bool:
        return None not in (self.read, self.written, self.uncached)

    @property
    def total(self) -> int:
        return (self.read or 0) + (self.written or 0) + (self.uncached or 0)

    @property
    def read_share(self) -> float | None:
        return self.read / self.total if self.recorded and self.total else None

    @property
    def read_percent(self) -> int | None:
        share = self.read_share
        return None if share is None else round(100 * share)


@dataclass(frozen=True)
class SectionChange:
    """A part of the context compared with the previous snapshot's."""

    name: str
    status: str  # same | changed | added | removed
    before: str
    after: str
    items: list[str] = field(default_factory=list)  # what came and went, in words


@dataclass
class Inspection:
    turn: Turn
    snapshot: ContextSnapshot | None
    previous_turn: Turn | None
    next_turn: Turn | None
    absent: str = ""  # why there is no snapshot, when there is none
    at: datetime | None = None  # the moment the context was assembled
    zone: str = ""
    missing: list[str] = field(default_factory=list)
    bars: list[Bar] = field(default_factory=list)
    pools: list[Bar] = field(default_factory=list)
    total_tokens: int = 0
    chars_per_token: float | None = None
    lingering: list[LingeringShown] = field(default_factory=list)
    summaries: list[SummaryShown] = field(default_factory=list)
    unsummarised: tuple[int, int] | None = None
    recalled: list[RecalledShown] = field(default_factory=list)
    found: list[RecalledShown] = field(default_factory=list)
    woken: list[dict] = field(default_factory=list)  # {key, said}: what the message named
    recent: RecentShown | None = None
    corrections: list[CorrectionShown] = field(default_factory=list)
    outside_recent: str = ""
    left_out: list[LeftOut] = field(default_factory=list)
    breakpoints: list[Breakpoint] = field(default_factory=list)
    cache: CacheUse | None = None
    previous_snapshot: ContextSnapshot | None = None
    changes: list[SectionChange] = field(default_factory=list)

    @property
    def left_out_by_section(self) -> list[tuple[str, list[LeftOut]]]:
        grouped: dict[str, list[LeftOut]] = {}
        for item in self.left_out:
            grouped.setdefault(item.section, []).append(item)
        return list(grouped.items())

    @property
    def changed(self) -> list[SectionChange]:
        return [change for change in self.changes if change.status != "same"]


def turn_inspection(*, turn: Turn) -> Inspection:
    """Everything a person reads about ``turn``'s context (see the module's docstring)."""
    inspection = Inspection(
        turn=turn,
        snapshot=snapshot_of(turn.pk),
        previous_turn=Turn.objects.filter(pk__lt=turn.pk).order_by("-pk").first(),
        next_turn=Turn.objects.filter(pk__gt=turn.pk).order_by("pk").first(),
    )
    snapshot = inspection.snapshot
    if snapshot is None:
        inspection.absent = absent_reason(turn)
        return inspection
    included = snapshot.items_included or {}
    inputs = snapshot.inputs or {}
    inspection.at, inspection.zone = assembled_when(snapshot)
    inspection.chars_per_token = inputs.get("chars_per_token")
    inspection.missing = missing_records(snapshot)
    inspection.bars, inspection.pools = _bars(snapshot)
    inspection.total_tokens = snapshot.token_counts.get("total", 0)
    sections = sections_of(snapshot.assembled_user)
    truncated = included.get("truncated", {})
    inspection.lingering = _lingering_shown(included, truncated)
    inspection.summaries = _summaries_shown(included, truncated)
    unsummarised = included.get("unsummarised")
    inspection.unsummarised = tuple(unsummarised) if unsummarised else None
    inspection.recalled = _recalled_shown(included, truncated, sections.get("Recalled", ""))
    inspection.found = _recalled_shown(
        included, truncated, sections.get("Found", ""), section="found"
    )
    inspection.woken = included.get("woken") or []
    inspection.recent = _recent_shown(included, truncated)
    inspection.previous_snapshot = (
        ContextSnapshot.objects.filter(turn__lt=turn.pk).order_by("-turn", "-ts", "-id").first()
    )
    inspection.corrections = _corrections_shown(inspection)
    inspection.left_out = [
        *_lingering_left_out(inspection, included),
        *_summaries_left_out(inspection, included),
        *_recalled_left_out(included),
        *_recalled_left_out(included, section="found"),
        *_not_recalled(snapshot.assembled_system, included),
    ]
    inspection.outside_recent = _outside_recent(inspection)
    inspection.cache = _cache_use(turn)
    minimum = inspection.cache.minimum
    inspection.breakpoints = _breakpoints(included.get("cache", []), minimum)
    inspection.changes = snapshot_changes(inspection.previous_snapshot, snapshot)
    return inspection


def snapshot_of(turn_id: int) -> ContextSnapshot | None:
    """The turn's snapshot (the newest, should a retried turn have kept two)."""
    return ContextSnapshot.objects.filter(turn=turn_id).order_by("-ts", "-id").first()


def assembled_when(snapshot: ContextSnapshot) -> tuple[datetime, str]:
    """The moment the snapshot's context was assembled and the time zone it was read in (the
    moment it was kept and the zone set now, for a snapshot older than its inputs)."""
    inputs = snapshot.inputs or {}
    at = datetime.fromisoformat(inputs["now"]) if "now" in inputs else snapshot.ts
    return at, inputs.get("zone") or settings.TIME_ZONE


def absent_reason(turn: Turn) -> str:
    """Why a turn has no snapshot, in words."""
    if turn.status in (TurnStatus.QUEUED, TurnStatus.RUNNING):
        return (
            "This turn has not been answered yet: its context is kept when the reply has been "
            "logged."
        )
    if turn.status == TurnStatus.ERROR:
        return (
            "This turn failed, so no context was kept: a snapshot is taken only once the reply "
            "is logged. A retry that succeeds keeps one."
        )
    days = settings.SNAPSHOT_RETENTION_DAYS
    kept_since = timezone.now() - timedelta(days=days)
    if turn.finished_at is not None and turn.finished_at < kept_since:
        return (
            f"Snapshots are kept for {days} days (SILENTSTAR_SNAPSHOT_RETENTION_DAYS): this "
            "turn's has been pruned."
        )
    return "No snapshot was kept for this turn."


def missing_records(snapshot: ContextSnapshot) -> list[str]:
    """What an older snapshot did not keep, so the page cannot say."""
    included, missing = snapshot.items_included or {}, []
    if "left_out" not in included:
        missing.append("why each item was left out (only how many were)")
    if "lingering_scores" not in included:
        missing.append("the scores of the working memory included")
    if "cache" not in included:
        missing.append("where the prompt cache's breakpoints were")
    if "recent_window" not in included or "held_from" not in included.get("recent_window", {}):
        missing.append("where the Recent window started and whether it moved")
    if not snapshot.inputs:
        missing.append(
            "the inputs (the moment it was assembled, the turn counter, the pending recall)"
        )
    return missing


def sections_of(user_text: str) -> dict[str, str]:
    """The user message's sections by name (``Lingering``…``Message``), each with its heading.

    A line that is exactly a section's heading starts it. Content never holds one (the
    assembler escapes a ``#`` that opens a line), except the person's message, which is sent
    verbatim and always last: everything after ``## Message`` is the message.
    """
    sections: dict[str, list[str]] = {}
    current = None
    for line in user_text.split("\n"):
        if current != "Message" and line in HEADINGS:
            current = line.removeprefix("## ")
            sections[current] = []
        if current is not None:
            sections[current].append(line)
    return {name: "\n".join(lines).strip("\n") for name, lines in sections.items()}


def entries_of(section: str) -> list[tuple[str, str]]:
    """The ``### title`` entries of the Summaries or Recalled section: (title, text) each."""
    entries: list[tuple[str, list[str]]] = []
    for line in section.split("\n")[1:]:
        if line.startswith("### "):
            entries.append((line.removeprefix("### "), []))
        elif entries:
            entries[-1][1].append(line)
    return [(title, "\n".join(lines).strip()) for title, lines in entries]


# --- What went in ------------------------------------------------------------------------------


def _bars(snapshot: ContextSnapshot) -> tuple[list[Bar], list[Bar]]:
    counts = snapshot.token_counts or {}
    budgets = budgets_from_settings(chars_per_token=1.0)
    pools = {
        "user": budgets.pool_user,
        "say": budgets.pool_say,
        "do": budgets.pool_do,
        "flex": budgets.pool_flex,
    }
    bars = [
        Bar("Wake text", counts.get("wake", 0)),
        Bar("Image text", counts.get("image", 0)),
        Bar("Ambient prose", counts.get("ambient", 0)),
        Bar("Lingering", counts.get("lingering", 0), budgets.working_memory),
        Bar("Summaries", counts.get("summaries", 0), budgets.summaries),
        Bar("Recalled", counts.get("recalled", 0), budgets.recall),
        Bar("Found", counts.get("found", 0), budgets.found),
        Bar("Recent", counts.get("recent", 0), sum(pools.values())),
        Bar("Now", counts.get("now", 0)),
        Bar("Message", counts.get("message", 0)),
    ]
    charged = (snapshot.items_included or {}).get("pool_tokens") or {}
    pool_bars = [Bar(f"{pool} pool", charged.get(pool, 0), pools[pool]) for pool in pools]
    return bars, pool_bars if charged else []


def _lingering_shown(included: dict, truncated: dict) -> list[LingeringShown]:
    ids = included.get("lingering", [])
    scores = {int(key): value for key, value in (included.get("lingering_scores") or {}).items()}
    rows = WorkingMemory.objects.in_bulk(ids)
    cut = set(truncated.get("lingering", []))
    shown = []
    for item_id in ids:
        row = rows.get(item_id)
        shown.append(
            LingeringShown(
                id=item_id,
                type=row.type if row else "",
                subject=row.subject if row else "",
                content=row.content if row else "",
                score=scores.get(item_id),
                due=row.due if row else None,
                cut=item_id in cut,
                found=row is not None,
            )
        )
    return shown


def _summaries_shown(included: dict, truncated: dict) -> list[SummaryShown]:
    ids = included.get("summaries", [])
    rows = Summary.objects.in_bulk(ids)
    cut = set(truncated.get("summaries", []))
    return [
        SummaryShown(
            id=summary_id,
            level=rows[summary_id].level if summary_id in rows else "",
            first_event_id=rows[summary_id].first_event_id if summary_id in rows else None,
            last_event_id=rows[summary_id].last_event_id if summary_id in rows else None,
            content=rows[summary_id].content if summary_id in rows else "",
            cut=summary_id in cut,
            found=summary_id in rows,
        )
        for summary_id in ids
    ]


def _recalled_shown(
    included: dict, truncated: dict, text: str, *, section: str = "recalled"
) -> list[RecalledShown]:
    """Each recalled (or found) key with the tier, the reason it came unasked and the text its
    entry was sent with."""
    keys = included.get(section, [])
    whys = included.get("recalled_why", {}) if section == "recalled" else {}
    entries = entries_of(text)
    cut = set(truncated.get(section, []))
    fragments = set(
        Fragment.objects.filter(pk__in=[_fragment_key(key) for key in keys]).values_list(
            "pk", flat=True
        )
    )
    shown, start = [], 0
    for key in keys:
        tier, body_of = "", ""
        for index in range(start, len(entries)):  # entries come in the keys' order
            title, body = entries[index]
            if title.startswith(f"{key} (") and title.endswith(")"):
                tier, body_of, start = title[len(key) + 2 : -1], body, index + 1
                break
        why = whys.get(key, "")
        tier = tier.removesuffix(f", {why}") if why else tier
        link = _recalled_link(key, fragments)
        shown.append(RecalledShown(key, tier, body_of, key in cut, link, why))
    return shown


def _fragment_key(key: str) -> str:
    return key.removeprefix("fragment:")


def _recalled_link(key: str, fragments: set[str]) -> tuple[str, str] | None:
    """Where a recalled key leads: a fragment's key, or a search hit's ``event:12``,
    ``wm:3``, ``fragment:fairy``."""
    kind, _, ref = key.partition(":")
    if kind == "event" and ref.isdigit():
        return ("event", ref)
    if kind == "wm" and ref.isdigit():
        return ("working_memory", ref)
    if _fragment_key(key) in fragments:
        return ("fragment", _fragment_key(key))
    return None


def _recent_shown(included: dict, truncated: dict) -> RecentShown | None:
    recent = included.get("recent")
    if recent is None:
        return None
    events = sorted({event_id for ids in recent.values() for event_id in ids})
    window = included.get("recent_window") or {}
    return RecentShown(
        first_event_id=events[0] if events else None,
        last_event_id=events[-1] if events else None,
        events=len(events),
        pools={pool: len(ids) for pool, ids in recent.items()},
        flex=len(included.get("recent_flex", [])),
        cut=list(truncated.get("recent", [])),
        window_first=window.get("first_event"),
        full=window.get("full"),
        held_from=window.get("held_from"),
        moved=window.get("moved"),
    )


def _corrections_shown(inspection: Inspection) -> list[CorrectionShown]:
    """The corrections of the events from Recent's first to the turn's message and of its
    reply, and those of earlier events made since the turn before (a message taken back then
    is in no window), oldest first."""
    turn, recent, previous = inspection.turn, inspection.recent, inspection.previous_snapshot
    # A turn she wrote first answers no message: Recent runs up to her reply.
    last = turn.event_id if turn.event_id is not None else turn.reply_event_id
    if last is None:
        return []
    first = recent.first_event_id if recent and recent.first_event_id else last
    since_previous = Q(event_id__lt=first, made_at__lte=inspection.snapshot.ts)
    if previous is not None:
        since_previous &= Q(made_at__gt=previous.ts)
    rows = Correction.objects.filter(
        Q(event_id__gte=first, event_id__lte=last)
        | Q(event_id=turn.reply_event_id)
        | since_previous
    ).order_by("id")
    return [
        CorrectionShown(
            event_id=row.event_id,
            kind=row.kind,
            made_by=row.made_by,
            when=row.made_at.astimezone(ZoneInfo(inspection.zone)).strftime("%-d %b %Y, %H:%M"),
            since=row.made_at > inspection.snapshot.ts,
        )
        for row in rows
    ]


# --- What was left out, and why ------------------------------------------------------------------


def _when(moment: datetime, zone: str) -> str:
    return due_in_words(moment, moment.astimezone(ZoneInfo(zone)))


def budget_sentence(rank: int, tokens: int | None = None, room: int | None = None) -> str:
    """Why an item the assembler ranked was cut: ``cut by the budget at rank 7 (needed 42
    tokens, 12 left)``."""
    if tokens is None:
        return f"cut by the budget at rank {rank}"
    return f"cut by the budget at rank {rank} (needed {tokens:,} tokens, {room:,} left)"


def _item_label(item_id: int, row: WorkingMemory | None) -> str:
    if row is None:
        return f"#{item_id} (no longer in working memory)"
    subject = f": {row.subject}" if row.subject else ""
    return f"#{item_id} {row.type}{subject} — {row.content}"


def _submerged(row: WorkingMemory | None, at: datetime, zone: str) -> str:
    """The sentence for a timed plan sitting at its floor at ``at``, or ""."""
    if row is None or row.type != PLAN or row.due is None:
        return ""
    for phase in plan_phases(refreshed_at=row.refreshed_at, due=row.due):
        if phase.start <= at and (phase.end is None or at < phase.end):
            if phase.name != "floor":
                return ""
            rises = row.due - timedelta(hours=PLAN_RESURFACE_HOURS)
            return (
                f"submerged: a plan at its floor until {PLAN_RESURFACE_HOURS:g} hours before it "
                f"is due (it rises from {_when(rises, zone)})"
            )
    return ""


def _lingering_left_out(inspection: Inspection, included: dict) -> list[LeftOut]:
    left = (included.get("left_out") or {}).get("lingering")
    if left is None:
        return _dropped_only(included, "Lingering", "lingering", "working-memory item")
    rows = WorkingMemory.objects.in_bulk([item["id"] for item in left])
    out = [
        LeftOut(
            "Lingering",
            _item_label(item["id"], rows.get(item["id"])),
            lingering_left_reason(item, rows.get(item["id"]), inspection.at, inspection.zone),
            _wm_link(item["id"]),
        )
        for item in left
    ]
    further = included["left_out"].get("lingering_further", [])
    if further:
        out.append(
            LeftOut(
                "Lingering",
                f"and {counted(len(further), 'more item')}",
                "cut by the budget, lower in the ranking than those above",
            )
        )
    return out + _working_memory_gone(inspection, included, [*left, *further])


def lingering_left_reason(item: dict, row: WorkingMemory | None, at: datetime, zone: str) -> str:
    """Why the working-memory item a snapshot's ``left_out`` names (``item``; ``row`` is the
    item now) was left out of a context assembled at ``at``: under the floor, or cut by the
    budget, a timed plan at its floor being said to be submerged first, a hidden plan before
    its window said to be hidden."""
    if item["reason"] == "faded":
        if row is not None and row.hidden and not hidden_plan_surfaces(due=row.due, now=at):
            rises = row.due - timedelta(hours=PLAN_RESURFACE_HOURS)
            return f"a hidden plan, out of Lingering until {_when(rises, zone)}"
        return f"under the {FLOOR_THRESHOLD:g} floor (score {item['score']:g})"
    reason = budget_sentence(item["rank"], item.get("tokens"), item.get("room"))
    if submerged := _submerged(row, at, zone):
        return f"{submerged}; {reason}"
    return reason


def _left_id(item: dict | int) -> int:
    """The id of a left-out item: a near miss's record, or an id further down."""
    return item if isinstance(item, int) else item["id"]


def _working_memory_gone(inspection: Inspection, included: dict, left: list) -> list[LeftOut]:
    """Working memory not active at the turn that was there not long before: in the previous
    snapshot, or left since the turn before (a day before, for a first turn)."""
    at, zone, previous = inspection.at, inspection.zone, inspection.previous_snapshot
    here = set(included.get("lingering", [])) | {_left_id(item) for item in left}
    before = (previous.items_included or {}) if previous else {}
    were_there = set(before.get("lingering", [])) | set(
        previous.working_memory_active() if previous else ()
    )
    since = assembled_when(previous)[0] if previous else at - LEFT_RECENTLY
    gone = WorkingMemory.objects.exclude(pk__in=here).filter(
        Q(pk__in=were_there) | Q(resolved_at__gt=since, resolved_at__lte=at)
    )
    rows = {row.pk: row for row in gone.order_by("pk")}
    out = [
        LeftOut("Lingering", _item_label(row.pk, row), _not_active(row, zone), _wm_link(row.pk))
        for row in rows.values()
    ]
    out += [
        LeftOut(
            "Lingering",
            _item_label(item_id, None),
            "in the turn before, and no longer in working memory (archived or deleted)",
        )
        for item_id in sorted(were_there - here - set(rows))
    ]
    return out


def _not_active(row: WorkingMemory, zone: str) -> str:
    if row.status == WorkingMemoryStatus.ACTIVE:
        return "not active at the time (it is active again now)"
    when = f", {_when(row.resolved_at, zone)}" if row.resolved_at else ""
    return f"not active: {row.status}{when}"


def _wm_link(item_id: int) -> tuple[str, str]:
    return ("working_memory", str(item_id))


def _dropped_only(
    included: dict, section: str, key: str, noun: str, nouns: str = ""
) -> list[LeftOut]:
    """What an old snapshot says of a section it left items out of: how many."""
    dropped = included.get("dropped") or {}
    out = []
    if count := dropped.get(key, 0):
        out.append(LeftOut(section, counted(count, noun, nouns), "left out (no reason was kept)"))
    if key == "lingering" and (faded := dropped.get("lingering_faded", 0)):
        out.append(
            LeftOut(section, counted(faded, noun, nouns), f"under the {FLOOR_THRESHOLD:g} floor")
        )
    return out


def _read_before(inspection: Inspection) -> int:
    """The turn's context read the log before this id: its message's, or, when she wrote first,
    the one after the newest event then (kept with the snapshot's inputs)."""
    if inspection.turn.event_id is not None or not inspection.snapshot.inputs:
        return inspection.turn.event_id or 0
    return ContextInputs.from_json(inspection.snapshot.inputs).before


def _summary_label(summary_id: int, row: Summary | None) -> str:
    if row is None:
        return f"summary #{summary_id} (no longer kept)"
    return f"#{summary_id} {row.level}, events {row.first_event_id}–{row.last_event_id}"


def _summaries_then(snapshot: ContextSnapshot, event_id: int):
    """The summaries of what came before ``event_id`` as they stood at the turn, and those
    superseded by then: written by then (the snapshot's ``summaries_through``, the newest id),
    as ``heart.context`` reads them for a past turn; as they stand now for a snapshot that did
    not keep it."""
    through = snapshot.items_included.get("summaries_through")
    before = Summary.objects.filter(first_event_id__lt=event_id).only(
        "id", "level", "first_event_id", "last_event_id", "superseded_by_id"
    )
    if through is None:
        return before.filter(superseded_by__isnull=True), before.filter(superseded_by__isnull=False)
    written = before.filter(pk__lte=through)
    return written.exclude(superseded_by__lte=through), written.filter(superseded_by__lte=through)


def _summaries_left_out(inspection: Inspection, included: dict) -> list[LeftOut]:
    left = (included.get("left_out") or {}).get("summaries")
    if left is None:
        return _dropped_only(included, "Summaries", "summaries", "summary", "summaries")
    rows = Summary.objects.in_bulk([item["id"] for item in left])
    out = [
        LeftOut(
            "Summaries",
            _summary_label(item["id"], rows.get(item["id"])),
            f"{budget_sentence(item['rank'])}: the summaries reach back from Recent without "
            "gaps and stop at the first that does not fit",
            ("summary", str(item["id"])),
        )
        for item in left
    ]
    before = _read_before(inspection)
    current, superseded = _summaries_then(inspection.snapshot, before)
    shown = [summary for summary in inspection.summaries if summary.found]
    considered = {summary.id for summary in shown} | {item["id"] for item in left}
    window_first = (included.get("recent_window") or {}).get("first_event") or before
    by_kind: dict[str, list[tuple[Summary, str]]] = {}
    for row in current.exclude(pk__in=considered).order_by("-last_event_id", "-pk"):
        kind, reason = _summary_not_chosen(row, shown, window_first)
        by_kind.setdefault(kind, []).append((row, reason))
    counts = {kind: len(pairs) for kind, pairs in by_kind.items()}
    superseded = superseded.exclude(pk__in=considered)
    by_kind["superseded"] = [
        (row, f"superseded by summary #{row.superseded_by_id}")
        for row in superseded.order_by("-last_event_id", "-pk")[:LISTED_AT_MOST]
    ]
    counts["superseded"] = superseded.count() if by_kind["superseded"] else 0
    for kind, pairs in by_kind.items():
        out += [
            LeftOut("Summaries", _summary_label(row.pk, row), reason, ("summary", str(row.pk)))
            for row, reason in pairs[:LISTED_AT_MOST]
        ]
        if counts[kind] > LISTED_AT_MOST:
            label = (
                f"and {counted(counts[kind] - LISTED_AT_MOST, 'older summary', 'older summaries')}"
            )
            out.append(LeftOut("Summaries", label, f"{kind}, as those above"))
    return out


def _summary_not_chosen(row: Summary, shown: list[SummaryShown], window_first: int):
    """Why a summary current at the turn did not stand behind Recent: (kind, sentence)."""
    if row.first_event_id >= window_first:
        return "overlapping Recent", (
            f"summary overlapping Recent: it starts at event {row.first_event_id}, inside the "
            f"window (from event {window_first})"
        )
    for other in shown:
        if other.first_event_id <= row.first_event_id and row.last_event_id <= other.last_event_id:
            return "covered", f"covered by summary #{other.id}, shown instead"
    finer = [
        f"#{other.id}"
        for other in shown
        if row.first_event_id <= other.first_event_id and other.last_event_id <= row.last_event_id
    ]
    if finer:
        return "shown finer", f"its events are shown finer, by summaries {', '.join(finer)}"
    reach = min((other.first_event_id for other in shown), default=None)
    if reach is not None and row.last_event_id < reach:
        return "beyond the budget", "further back than the Summaries budget reached"
    return "not chosen", "not chosen to stand behind Recent"


def _recalled_left_out(included: dict, *, section: str = "recalled") -> list[LeftOut]:
    left = (included.get("left_out") or {}).get(section)
    if left is None:
        if section == "found":
            return []  # a snapshot from before anything was found for the message
        return _dropped_only(included, "Recalled", "recalled", "recalled item")
    keys = [item["key"] for item in left]
    fragments = set(
        Fragment.objects.filter(pk__in=[_fragment_key(key) for key in keys]).values_list(
            "pk", flat=True
        )
    )
    return [
        LeftOut(
            section.title(),
            f"{item['key']} ({_tier_and_why(item['tier'], item.get('why', ''))})",
            budget_sentence(item["rank"], item.get("tokens"), item.get("room")),
            _recalled_link(item["key"], fragments),
        )
        for item in left
    ]


def _tier_and_why(tier: str, why: str) -> str:
    return f"{tier}, {why}" if why else tier


def _not_recalled(system_text: str, included: dict) -> list[LeftOut]:
    """The fragments the ambient prose names that the turn did not recall: she knew they were
    there, and the reply before asked for none of them."""
    if "left_out" not in included:
        return []
    asked = {*included.get("recalled", []), *(i["key"] for i in included["left_out"]["recalled"])}
    named = [key for key in dict.fromkeys(AMBIENT_KEY.findall(system_text)) if key not in asked]
    stored = set(Fragment.objects.filter(pk__in=named).values_list("pk", flat=True))
    return [
        LeftOut("Recalled", key, not_recalled(named=True), ("fragment", key))
        for key in named[:LISTED_AT_MOST]
        if key in stored
    ]


def not_recalled(*, named: bool) -> str:
    """Why a stored fragment that was neither recalled nor cut is not in Recalled; ``named``:
    the ambient prose names it, so she knew it was there."""
    names = "the ambient prose names it, " if named else ""
    return (
        f"not recalled: {names}the message named neither its key nor a trigger, and the reply "
        "before asked for no recall(…) or search(…) that reached it"
    )


def _outside_recent(inspection: Inspection) -> str:
    """The events before Recent's window: how many, which the summaries shown cover, and
    which no summary shown stands for (not summarised yet, further back than the summaries
    reach, or a stretch between them)."""
    recent = inspection.recent
    if recent is None:
        return ""
    window_first = recent.window_first or _read_before(inspection)
    before = Event.objects.filter(pk__lt=window_first).aggregate(
        first=Min("pk"), last=Max("pk"), count=Count("pk")
    )
    if before["first"] is None:
        return "nothing: the window reaches back to the conversation's start."
    first, last = before["first"], before["last"]
    said = [f"{counted(before['count'], 'event')} before the window ({_span(first, last)})"]
    covered = _merged(
        (max(s.first_event_id, first), min(s.last_event_id, last))
        for s in inspection.summaries
        if s.found and s.first_event_id <= last and s.last_event_id >= first
    )
    if covered:
        spans = " and ".join(_span(*span, events=False) for span in covered)
        said.append(f"the summaries shown cover events {spans}")
    hole = inspection.unsummarised
    for gap in _gaps(covered, first, last):
        if hole and hole[0] <= gap[0] and gap[1] <= hole[1]:
            said.append(f"{_span(*gap)} are not summarised yet, and the context says so")
        elif not covered:
            said.append(f"no summary stands for {_span(*gap)} in this context")
        elif gap[1] < covered[0][0]:
            said.append(f"{_span(*gap)} are further back than the summaries reach")
        else:
            said.append(f"{_span(*gap)} are in no summary shown")
    return "; ".join(said) + "."


def _span(first: int, last: int, *, events: bool = True) -> str:
    word = "event" if first == last else "events"
    span = str(first) if first == last else f"{first}–{last}"
    return f"{word} {span}" if events else span


def _merged(spans) -> list[tuple[int, int]]:
    merged: list[tuple[int, int]] = []
    for first, last in sorted(spans):
        if merged and first <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(merged[-1][1], last))
        else:
            merged.append((first, last))
    return merged


def _gaps(covered: list[tuple[int, int]], first: int, last: int) -> list[tuple[int, int]]:
    gaps, at = [], first
    for start, end in covered:
        if start > at:
            gaps.append((at, start - 1))
        at = max(at, end + 1)
    if at <= last:
        gaps.append((at, last))
    return gaps


# --- The prompt cache -----------------------------------------------------------------------------


def _cache_use(turn: Turn) -> CacheUse:
    offline = turn.model == OFFLINE_MODEL
    minimum_model = turn.model if turn.model and not offline else settings.HEART_MODEL
    return CacheUse(
        model=turn.model,
        minimum_model=minimum_model,
        minimum=cache_minimum(settings.CACHE_MINIMUM_TOKENS, minimum_model),
        offline=offline,
        read=turn.cache_read_tokens,
        written=turn.cache_write_tokens,
        uncached=turn.input_tokens,
    )


def _breakpoints(entries: list[dict], minimum: int) -> list[Breakpoint]:
    """Each breakpoint, with the prefix it closes in words."""
    system = [entry for entry in entries if entry["part"] == "system"]
    made = []
    for entry in entries:
        if entry["part"] == "user":
            where = "the system prompt, Summaries and Recent"
        elif entry is system[-1]:
            where = "the whole system prompt"
        else:
            where = "the wake text"
        made.append(
            Breakpoint(
                part=entry["part"],
                block=entry["block"],
                ttl=entry["ttl"],
                prefix_tokens=entry["prefix_tokens"],
                where=where,
                minimum=minimum,
            )
        )
    return made


# --- Since the turn before ----------------------------------------------------------------------


def snapshot_changes(
    previous: ContextSnapshot | None, snapshot: ContextSnapshot
) -> list[SectionChange]:
    """Each part of ``snapshot``'s context beside ``previous``'s, with what came and went."""
    if previous is None:
        return []
    before, after = sections_of(previous.assembled_user), sections_of(snapshot.assembled_user)
    old, new = previous.items_included or {}, snapshot.items_included or {}
    changes = [_change(SYSTEM, previous.assembled_system, snapshot.assembled_system, [])]
    for name in SECTION_NAMES:
        changes.append(
            _change(name, before.get(name, ""), after.get(name, ""), _items_moved(name, old, new))
        )
    return changes


def _change(name: str, before: str, after: str, items: list[str]) -> SectionChange:
    if before == after:
        status = "same"
    elif not before:
        status = "added"
    elif not after:
        status = "removed"
    else:
        status = "changed"
    return SectionChange(name, status, before, after, items)


def _items_moved(name: str, old: dict, new: dict) -> list[str]:
    key = {
        "Lingering": "lingering",
        "Summaries": "summaries",
        "Recalled": "recalled",
        "Found": "found",
    }.get(name)
    if key is not None:
        mark = "" if key in ("recalled", "found") else "#"
        came = [item for item in new.get(key, []) if item not in old.get(key, [])]
        went = [item for item in old.get(key, []) if item not in new.get(key, [])]
        return [
            *([f"came in: {', '.join(f'{mark}{item}' for item in came)}"] if came else []),
            *([f"went out: {', '.join(f'{mark}{item}' for item in went)}"] if went else []),
        ]
    if name != "Recent":
        return []
    old_events = {e for ids in (old.get("recent") or {}).values() for e in ids}
    new_events = {e for ids in (new.get("recent") or {}).values() for e in ids}
    said = []
    if came := len(new_events - old_events):
        said.append(f"{counted(came, 'event')} came in at the end")
    if went := len(old_events - new_events):
        said.append(f"{counted(went, 'event')} left from the start")
    old_first = (old.get("recent_window") or {}).get("first_event")
    new_first = (new.get("recent_window") or {}).get("first_event")
    if old_first != new_first and old_first is not None and new_first is not None:
        said.append(f"the window's start moved from event {old_first} to event {new_first}")
    return said
