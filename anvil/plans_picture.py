"""Where a consultation's proposed plans fall among the plans already in working memory, drawn
above its proposals in the Anvil so a person deciding sees what is overdue, what clashes, what
is bunched together and what is hidden.

`plans_picture` reads what the picture needs (the consultation's proposals, the active plans
with a due date, the owner's time zone); `plans_build` turns that into the geometry of an SVG
that ``admin/compass/consultation/_plans.html`` draws, once wide and once for a phone. The
time axis is the decay picture's (`time_ticks`, `tick_label`); clashes are paired as the
review pairs them (`compass.findings.clash_pairs`), so the picture and its findings agree.
"""

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from django.utils.dateformat import format as date_format

from anvil.decay_picture import (
    CHAR_WIDTH,
    DAY,
    label_anchor,
    tick_label,
    time_ticks,
    when_format,
)
from compass.findings import clash_pairs
from gem.models import WorkingMemory, WorkingMemoryStatus, WorkingMemoryType
from gem.zone import owner_time_zone
from mirror.models import SuggestionStatus
from silentstar.words import counted

SPAN_MIN = timedelta(days=7)
SPAN_MAX = timedelta(days=90)
MEMORY, PROPOSED = "memory", "proposed"
LANE_TITLES = {MEMORY: "In working memory", PROPOSED: "Proposed"}
# What a mark is: its class in the picture, and the word its label and list carry.
ACTIVE, OVERDUE, PENDING = "active", "overdue", "pending"
PROMOTED, REJECTED = SuggestionStatus.PROMOTED.value, SuggestionStatus.REJECTED.value
STATE_WORDS = {OVERDUE: "overdue", PROMOTED: "promoted", REJECTED: "rejected"}
LABEL_GAP = 8  # user units between two labels on one row
CLASH_PAD = 7  # a band reaches this far past its two marks, so two marks at one x still show one


@dataclass(frozen=True)
class Frame:
    """One drawing size: the SVG's width in user units, the margins either side of the time
    axis, the font, the most ticks and the longest label. The height follows the rows."""

    name: str
    width: int
    left: int
    right: int
    font: int
    ticks: int
    label_chars: int

    @property
    def plot_width(self) -> int:
        return self.width - self.left - self.right

    @property
    def plot_right(self) -> int:
        return self.width - self.right

    @property
    def row_height(self) -> float:
        return round(self.font * 1.35, 1)


WIDE = Frame("wide", width=760, left=22, right=22, font=12, ticks=7, label_chars=32)
NARROW = Frame("narrow", width=360, left=14, right=14, font=11, ticks=5, label_chars=21)


@dataclass(frozen=True)
class Plan:
    """A plan as the picture places it: one in working memory, or one proposed."""

    lane: str
    name: str  # "wm 12" or "plan 2": how the list and the titles tell plans apart
    content: str
    due: datetime
    hidden: bool
    state: str  # active, overdue, pending, promoted or rejected


@dataclass(frozen=True)
class Mark:
    plan: Plan
    x: float
    y: float  # the lane's line
    label: str
    label_y: float
    anchor: str  # text-anchor: a label at an edge stays inside the picture
    label_left: float  # how far the label reaches, by an average character's width
    label_right: float
    row: int
    far: bool  # due past the picture's end: drawn at the right edge with an arrow
    title: str


@dataclass(frozen=True)
class Lane:
    name: str
    title: str
    top: float
    line_y: float
    bottom: float

    @property
    def height(self) -> float:
        return round(self.bottom - self.top, 1)


@dataclass(frozen=True)
class ClashBand:
    x: float
    width: float
    top: float
    height: float
    title: str


@dataclass(frozen=True)
class Tick:
    x: float
    label: str
    anchor: str


@dataclass(frozen=True)
class Layout:
    """The geometry of one SVG of the picture, in its own user units."""

    frame: Frame
    height: float
    lanes: list[Lane]
    marks: list[Mark]
    bands: list[ClashBand]
    ticks: list[Tick]
    now_x: float
    axis_y: float
    time_title: str

    @property
    def id(self) -> str:
        return f"compass-plans-{self.frame.name}"


@dataclass(frozen=True)
class ListedPlan:
    """A mark as the visually hidden list says it."""

    lane: str
    text: str


@dataclass(frozen=True)
class PlansPicture:
    title: str
    description: str  # the SVG's <desc>
    caption: str
    layouts: list[Layout]
    listed: list[ListedPlan]


def plans_picture(consultation: Any, proposed: list[tuple[int, Any]]) -> PlansPicture | None:
    """The picture of a done ``consultation``'s proposals (``proposed``: each its number and its
    suggestion, as its page read them) among the active plans with a due date in working
    memory; None when there is nothing to draw. A promoted proposal is drawn in the proposed
    lane only, though its plan is in working memory now."""
    if consultation.status != "done" or not proposed:
        return None
    now = consultation.started_at or consultation.finished_at
    promoted = {suggestion.promoted_wm_id for _, suggestion in proposed} - {None}
    items = (
        WorkingMemory.objects.filter(
            type=WorkingMemoryType.PLAN, status=WorkingMemoryStatus.ACTIVE, due__isnull=False
        )
        .exclude(pk__in=promoted)
        .order_by("due", "pk")
    )
    memory = [
        Plan(
            MEMORY,
            f"wm {item.pk}",
            item.content,
            item.due,
            item.hidden,
            OVERDUE if item.due <= now else ACTIVE,
        )
        for item in items
    ]
    proposals = [
        Plan(
            PROPOSED,
            f"plan {number}",
            suggestion.content,
            suggestion.due,
            suggestion.hidden,
            suggestion.status,
        )
        for number, suggestion in proposed
        if suggestion.due is not None
    ]
    return plans_build(memory + proposals, now=now, zone=ZoneInfo(owner_time_zone()))


def plans_build(plans: list[Plan], *, now: datetime, zone: ZoneInfo) -> PlansPicture:
    """The picture of ``plans`` from ``now`` (the consultation's moment) to just past the last
    due, in the owner's time zone."""
    end = plans_end([p.due for p in plans], now=now)
    when = when_format(zone, now)
    clashes = clashes_of(plans, now=now)
    layouts = [
        _layout(frame, plans, clashes, now=now, end=end, zone=zone) for frame in (WIDE, NARROW)
    ]
    counts = {lane: [p for p in plans if p.lane == lane] for lane in (MEMORY, PROPOSED)}
    overdue = sum(p.state == OVERDUE for p in plans)
    hidden = sum(p.hidden for p in plans)
    description = (
        f"A timeline from {when(now)}, the consultation's moment, to {when(end)}: "
        f"{_count(len(counts[MEMORY]), 'plan')} in working memory"
        f"{f' ({overdue} overdue)' if overdue else ''} and "
        f"{_count(len(counts[PROPOSED]), 'proposed plan')}; "
        f"{f'{hidden} hidden; ' if hidden else ''}"
        f"{_count(len(clashes), 'pair')} due within an hour of each other."
    )
    return PlansPicture(
        title="The proposed plans among the plans in working memory",
        description=description,
        caption=(
            "Each plan at its due date in your time zone; overdue plans sit at the left edge, "
            "hidden ones are hollow, and a band joins two plans due within an hour of each "
            "other."
        ),
        layouts=layouts,
        listed=[ListedPlan(LANE_TITLES[p.lane], _said(p, when)) for p in sorted(plans, key=_order)],
    )


def plans_end(dues: list[datetime], *, now: datetime) -> datetime:
    """The picture's right edge: a day past the last due (a tenth of the span for a long one),
    at least `SPAN_MIN` and at most `SPAN_MAX` after ``now``."""
    last = max(dues, default=now)
    margin = max(DAY, (last - now) / 10)
    return min(max(last + margin, now + SPAN_MIN), now + SPAN_MAX)


def clashes_of(plans: list[Plan], *, now: datetime) -> list[tuple[Plan, Plan]]:
    """Pairs of plans still to come, due within an hour of each other, as the review finds
    them; a rejected proposal is out of the running."""
    return clash_pairs(
        sorted((p for p in plans if p.due > now and p.state != REJECTED), key=lambda p: p.due)
    )


def cut(text: str, chars: int) -> str:
    """``text`` on one line, cut to at most ``chars`` characters with an ellipsis."""
    words = " ".join(text.split())
    return words if len(words) <= chars else words[: chars - 1].rstrip() + "…"


def _layout(
    frame: Frame,
    plans: list[Plan],
    clashes: list[tuple[Plan, Plan]],
    *,
    now: datetime,
    end: datetime,
    zone: ZoneInfo,
) -> Layout:
    span = end - now

    def x(moment: datetime) -> float:
        share = min(max((moment - now) / span, 0.0), 1.0)
        return round(frame.left + frame.plot_width * share, 1)

    when = when_format(zone, now)
    lanes, marks = [], []
    top = frame.font * 1.6  # room for the "now" label
    for lane_name in (MEMORY, PROPOSED):
        line_y = round(top + frame.font * 1.2 + 10, 1)
        placed = _place(
            [p for p in sorted(plans, key=_order) if p.lane == lane_name],
            frame,
            x=x,
            line_y=line_y,
            end=end,
            zone=zone,
            when=when,
        )
        rows = max((m.row + 1 for m in placed), default=1)
        bottom = round(line_y + 8 + rows * frame.row_height + 4, 1)
        lanes.append(Lane(lane_name, LANE_TITLES[lane_name], round(top, 1), line_y, bottom))
        marks += placed
        top = bottom + 6
    axis_y = round(top, 1)
    bands = []
    at = {mark.plan: mark for mark in marks}
    for first, second in clashes:
        a, b = at[first], at[second]
        upper, lower = min(a.y, b.y), max(a.y, b.y)
        bands.append(
            ClashBand(
                x=round(min(a.x, b.x) - CLASH_PAD, 1),
                width=round(abs(b.x - a.x) + 2 * CLASH_PAD, 1),
                top=round(upper - CLASH_PAD, 1),
                height=round(lower - upper + 2 * CLASH_PAD, 1),
                title=f"Clash: {first.name} ({when(first.due)}) and {second.name} "
                f"({when(second.due)}) are due within an hour of each other.",
            )
        )
    moments = time_ticks(now, end, zone=zone, most=frame.ticks)
    ticks = []
    for index, moment in enumerate(moments):
        label = tick_label(moment, moments, index, zone)
        position = x(moment)
        ticks.append(Tick(position, label, label_anchor(position, label, frame)))
    return Layout(
        frame=frame,
        height=round(axis_y + frame.font * 3.4, 1),
        lanes=lanes,
        marks=marks,
        bands=bands,
        ticks=ticks,
        now_x=x(now),
        axis_y=axis_y,
        time_title=f"due date ({zone.key})",
    )


def _place(
    plans: list[Plan], frame: Frame, *, x, line_y: float, end: datetime, zone: ZoneInfo, when
) -> list[Mark]:
    """The marks of one lane, left to right, each label on the first row below the line where
    it does not touch the label before it."""
    row_ends: list[float] = []
    marks = []
    for plan in plans:
        far = plan.due > end
        position = x(plan.due)
        label = _label(plan, frame, zone=zone, far=far)
        anchor = label_anchor(position, label, frame)
        left, right = _span(position, anchor, label, font=frame.font)
        row = next((i for i, edge in enumerate(row_ends) if edge + LABEL_GAP <= left), None)
        if row is None:
            row = len(row_ends)
            row_ends.append(right)
        else:
            row_ends[row] = right
        marks.append(
            Mark(
                plan=plan,
                x=position,
                y=line_y,
                label=label,
                label_y=round(line_y + 8 + (row + 1) * frame.row_height - frame.font * 0.3, 1),
                anchor=anchor,
                label_left=round(left, 1),
                label_right=round(right, 1),
                row=row,
                far=far,
                title=_said(plan, when),
            )
        )
    return marks


def _label(plan: Plan, frame: Frame, *, zone: ZoneInfo, far: bool) -> str:
    """The words beside a mark: its number for a proposal, its plan cut to fit, what it is."""
    said = [plan.name.removeprefix("plan ") + "." if plan.lane == PROPOSED else ""]
    if plan.state in STATE_WORDS:
        said.append(STATE_WORDS[plan.state])
    if plan.hidden:
        said.append("hidden")
    if far:
        said.append(f"→ {date_format(plan.due.astimezone(zone), 'j M Y')}")
    tail = " · ".join(s for s in said[1:])
    room = frame.label_chars - len(said[0]) - bool(said[0]) - (len(tail) + 3 if tail else 0)
    words = " ".join(s for s in (said[0], cut(plan.content, max(room, 8))) if s)
    return f"{words} · {tail}" if tail else words


def _said(plan: Plan, when) -> str:
    what = " ".join(plan.content.split())
    notes = [STATE_WORDS.get(plan.state, "")] + (["hidden"] if plan.hidden else [])
    noted = ", ".join(n for n in notes if n)
    return f"{plan.name}, due {when(plan.due)}: {what}" + (f" ({noted})" if noted else "")


def _order(plan: Plan) -> tuple:
    return (plan.due, plan.lane, plan.name)


def _span(position: float, anchor: str, text: str, *, font: int) -> tuple[float, float]:
    width = len(text) * font * CHAR_WIDTH
    if anchor == "start":
        return position, position + width
    if anchor == "end":
        return position - width, position
    return position - width / 2, position + width / 2


def _count(count: int, noun: str) -> str:
    return counted(count, noun) if count else f"no {noun}s"
