"""What the calls to Claude cost: per call, and summed per day and per component.

A call's dollars come from its tokens and its model's price (``settings.MODEL_PRICES``, the
table of ``silentstar/pricing.py`` with ``SILENTSTAR_MODEL_PRICES`` laid over it). A model with
no price has no cost (None, shown as "no price"), never a cost of 0; an offline call reached no
API and costs nothing, and so does a call to a local model server. Days are the owner's
(``gem.zone.owner_time_zone``): today and the days before it.
"""

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta
from zoneinfo import ZoneInfo

from django.db.models import Count, Sum
from django.db.models.functions import TruncDate
from django.utils import timezone

from gem.zone import owner_time_zone
from ledger.models import ModelCall
from silentstar.pricing import PRICES, PRICES_DATE, TOKEN_NAMES, Price, Tokens, cost, for_model


def call_cost(
    *,
    model: str,
    offline: bool,
    local: bool = False,
    prices: Mapping[str, Price],
    tokens: Tokens,
) -> float | None:
    """US dollars for a call (or for calls of one model, their tokens summed); None when the
    model has no price. An offline call and a local model's cost nothing."""
    if offline or local:
        return 0.0
    price = for_model(prices, model)
    return None if price is None else cost(price, tokens)


def prices_said(prices: Mapping[str, Price]) -> str:
    """Which prices the figures are at, for a page or a command's output."""
    said = f"at Anthropic's prices of {PRICES_DATE}"
    changed = sorted(name for name, price in prices.items() if PRICES.get(name) != price)
    if changed:
        said += f", with SILENTSTAR_MODEL_PRICES for {', '.join(changed)}"
    return said


@dataclass
class Figures(Tokens):
    """Calls, their tokens of each kind and their dollars."""

    calls: int = 0
    dollars: float = 0.0  # of the calls with a price
    unpriced_calls: int = 0  # calls to a model with no price: not in ``dollars``

    def add(self, other: "Figures") -> None:
        super().add(other)
        self.calls += other.calls
        self.dollars += other.dollars
        self.unpriced_calls += other.unpriced_calls

    @property
    def cache_read_share(self) -> float | None:
        """The share of the prompts' tokens read from the cache (None without any)."""
        return self.cache_read_tokens / self.sent_tokens if self.sent_tokens else None

    @property
    def dollars_text(self) -> str:
        """The dollars as people read them, saying when some or all calls have no price."""
        if self.calls and self.unpriced_calls == self.calls:
            return "no price"
        shown = f"${self.dollars:,.2f}" if self.dollars >= 1 else f"${self.dollars:.4f}"
        if self.unpriced_calls:
            calls = "call" if self.unpriced_calls == 1 else "calls"
            return f"{shown} + {self.unpriced_calls:,} {calls} with no price"
        return shown

    @property
    def share_text(self) -> str:
        share = self.cache_read_share
        return "—" if share is None else f"{share:.1%}"


@dataclass
class Day:
    day: date
    components: dict[str, Figures] = field(default_factory=dict)  # only those with calls
    total: Figures = field(default_factory=Figures)


@dataclass
class Costs:
    """The figures of the last ``len(days)`` days, oldest first, every day listed."""

    first: date
    last: date
    zone: str
    days: list[Day]
    components: dict[str, Figures]  # by name, for the whole period
    total: Figures


def costs_over(*, days: int, prices: Mapping[str, Price], now: datetime | None = None) -> Costs:
    """The calls of today and the ``days - 1`` days before it, in the owner's time zone, summed
    per day and per component (one query, grouped by day, component, model, offline and local)."""
    zone_name = owner_time_zone()
    zone = ZoneInfo(zone_name)
    last = timezone.localtime(now or timezone.now(), zone).date()
    first = last - timedelta(days=days - 1)
    start = datetime.combine(first, time(), tzinfo=zone)
    end = datetime.combine(last + timedelta(days=1), time(), tzinfo=zone)
    groups = (
        ModelCall.objects.filter(ts__gte=start, ts__lt=end)
        .annotate(day=TruncDate("ts", tzinfo=zone))
        .values("day", "component", "model", "offline", "local")
        .annotate(calls=Count("id"), **{name: Sum(name) for name in TOKEN_NAMES})
        .order_by("day", "component")
    )
    by_day = {first + timedelta(days=n): Day(first + timedelta(days=n)) for n in range(days)}
    components: dict[str, Figures] = {}
    total = Figures()
    for group in groups:
        figures = Figures(calls=group["calls"], **{name: group[name] for name in TOKEN_NAMES})
        dollars = call_cost(
            model=group["model"],
            offline=group["offline"],
            local=group["local"],
            prices=prices,
            tokens=figures,
        )
        figures.dollars = dollars or 0.0
        figures.unpriced_calls = group["calls"] if dollars is None else 0
        day = by_day[group["day"]]
        day.components.setdefault(group["component"], Figures()).add(figures)
        day.total.add(figures)
        components.setdefault(group["component"], Figures()).add(figures)
        total.add(figures)
    return Costs(
        first=first,
        last=last,
        zone=zone_name,
        days=list(by_day.values()),
        components=dict(sorted(components.items())),
        total=total,
    )
