"""The Anvil's Costs page: what the calls to Claude cost per day, drawn and tabled.

Each day is a bar of its dollars, stacked by component, with the day's cache-read share in a
strip below; the picture is an SVG drawn here (no script), and the table under it holds the
same figures. The figures are ``ledger.costs``'s, the same as ``manage.py cost`` prints.
"""

from dataclasses import dataclass, field
from math import floor, log10

from django import forms
from django.conf import settings
from django.core.exceptions import PermissionDenied
from django.template.response import TemplateResponse
from django.utils.dateformat import format as date_format

from ledger.costs import Costs, costs_over, prices_said
from silentstar.words import counted

VIEW_PERMISSION = "ledger.view_modelcall"
DAYS_CHOICES = (7, 30, 90)
DAYS_DEFAULT = 30
SERIES_COLOURS = 6  # classes anvil-costs-series-0 … 5 in static/anvil/costs.css, reused in turn

# The picture's geometry, in the SVG's own units (it scales to the page's width).
WIDTH = 720
LEFT = 64  # room for the dollar axis
RIGHT = 8
TOP = 12
BARS_HEIGHT = 200
GAP = 28  # between the bars and the share strip, room for the dates
SHARE_HEIGHT = 48
BOTTOM = 8
HEIGHT = TOP + BARS_HEIGHT + GAP + SHARE_HEIGHT + BOTTOM
DATE_LABELS = 8  # at most


class DaysForm(forms.Form):
    days = forms.TypedChoiceField(
        choices=[(days, f"{days} days") for days in DAYS_CHOICES],
        coerce=int,
        required=False,
        empty_value=DAYS_DEFAULT,
    )


@dataclass
class Rect:
    x: float
    y: float
    width: float
    height: float
    title: str
    series: int = 0


@dataclass
class Label:
    x: float
    y: float
    text: str


@dataclass
class Chart:
    width: int = WIDTH
    height: int = HEIGHT
    bars: list[Rect] = field(default_factory=list)
    shares: list[Rect] = field(default_factory=list)
    dollar_ticks: list[Label] = field(default_factory=list)  # y: the gridline's
    dates: list[Label] = field(default_factory=list)
    plot_left: int = LEFT
    plot_right: int = WIDTH - RIGHT
    bars_bottom: int = TOP + BARS_HEIGHT
    share_top: int = TOP + BARS_HEIGHT + GAP
    share_bottom: int = TOP + BARS_HEIGHT + GAP + SHARE_HEIGHT
    description: str = ""


def series_of(costs: Costs) -> dict[str, int]:
    """Each component's colour class, in the order of their names."""
    return {name: n % SERIES_COLOURS for n, name in enumerate(costs.components)}


def scale_top(largest: float) -> float:
    """The dollar axis's top: 1, 2 or 5 times a power of ten, at or above ``largest``."""
    if largest <= 0:
        return 1.0
    power = 10 ** floor(log10(largest))
    return next(step * power for step in (1, 2, 5, 10) if step * power >= largest)


def dollars_short(dollars: float) -> str:
    return f"${dollars:,.0f}" if dollars >= 10 else f"${dollars:.2g}" if dollars else "$0"


def chart_of(costs: Costs) -> Chart:
    """The picture of ``costs``: a stacked bar of dollars and a share bar per day."""
    chart = Chart()
    series = series_of(costs)
    top = scale_top(max(day.total.dollars for day in costs.days))
    slot = (chart.plot_right - chart.plot_left) / len(costs.days)
    bar_width = max(1.0, slot * 0.7)
    for tick in (0, top / 2, top):
        y = chart.bars_bottom - tick / top * BARS_HEIGHT
        chart.dollar_ticks.append(
            Label(x=chart.plot_left - 6, y=round(y, 1), text=dollars_short(tick))
        )
    every = max(1, -(-len(costs.days) // DATE_LABELS))
    for n, day in enumerate(costs.days):
        x = round(chart.plot_left + n * slot + (slot - bar_width) / 2, 1)
        when = date_format(day.day, "j M")
        if n % every == 0:
            chart.dates.append(
                Label(x=round(x + bar_width / 2, 1), y=chart.bars_bottom + 18, text=when)
            )
        y = chart.bars_bottom
        for name, figures in day.components.items():
            height = figures.dollars / top * BARS_HEIGHT
            if height <= 0:
                continue
            y -= height
            chart.bars.append(
                Rect(
                    x=x,
                    y=round(y, 2),
                    width=round(bar_width, 2),
                    height=round(height, 2),
                    title=(
                        f"{when}, {name}: {figures.dollars_text} ({counted(figures.calls, 'call')})"
                    ),
                    series=series[name],
                )
            )
        share = day.total.cache_read_share
        if share is not None:
            height = share * SHARE_HEIGHT
            chart.shares.append(
                Rect(
                    x=x,
                    y=round(chart.share_bottom - height, 2),
                    width=round(bar_width, 2),
                    height=round(height, 2),
                    title=f"{when}: {day.total.share_text} of the prompts read from the cache",
                )
            )
    chart.description = (
        f"{len(costs.days)} days from {date_format(costs.first, 'j M Y')} to "
        f"{date_format(costs.last, 'j M Y')}: {costs.total.dollars_text} in "
        f"{counted(costs.total.calls, 'call')}, {costs.total.share_text} of the prompts' tokens "
        "read from the cache. The table below gives each day's figures."
    )
    return chart


def costs_view(site, request) -> TemplateResponse:
    """The Costs page of the Anvil's ``site`` (for accounts that may view the ledger)."""
    if not request.user.has_perm(VIEW_PERMISSION):
        raise PermissionDenied
    form = DaysForm(request.GET)
    days = form.cleaned_data["days"] if form.is_valid() else DAYS_DEFAULT
    costs = costs_over(days=days, prices=settings.MODEL_PRICES)
    series = series_of(costs)
    return TemplateResponse(
        request,
        "anvil/costs.html",
        {
            **site.each_context(request),
            "title": "Costs",
            "form": form,
            "days": days,
            "days_choices": DAYS_CHOICES,
            "costs": costs,
            "chart": chart_of(costs),
            "legend": [(name, series[name]) for name in costs.components],
            "days_with_calls": [day for day in reversed(costs.days) if day.total.calls],
            "prices": prices_said(settings.MODEL_PRICES),
        },
    )
