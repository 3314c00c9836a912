"""manage.py cost [--days N]: what the calls to Claude cost, per day and per component, then
the totals and the share of the prompts read from the cache (the Anvil's Costs page, as text)."""

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from ledger.costs import Figures, costs_over, prices_said

DAYS_MAX = 3660
COLUMNS = (
    ("calls", "calls"),
    ("input", "input_tokens"),
    ("output", "output_tokens"),
    ("cache read", "cache_read_tokens"),
    ("write 5m", "cache_write_5m_tokens"),
    ("write 1h", "cache_write_1h_tokens"),
    ("searches", "web_searches"),
)


class Command(BaseCommand):
    help = (
        "What the calls to Claude cost over the last days (today included), per day and per "
        "component, then the totals and the cache-read share."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--days", type=int, default=30, help="How many days back, today included (30)."
        )

    def handle(self, *args, days: int, **options):
        if not 1 <= days <= DAYS_MAX:
            raise CommandError(f"--days must be from 1 to {DAYS_MAX}, got {days}")
        costs = costs_over(days=days, prices=settings.MODEL_PRICES)
        self.stdout.write(
            f"Calls to Claude from {costs.first} to {costs.last} ({costs.zone}), "
            f"{prices_said(settings.MODEL_PRICES)}."
        )
        if not costs.total.calls:
            self.stdout.write("No calls in these days.")
            return
        rows: list[tuple[str, str, Figures] | None] = [
            (str(day.day), component, figures)
            for day in costs.days
            for component, figures in day.components.items()
        ]
        rows.append(None)  # a blank line between the days and the totals
        rows += [("all days", name, figures) for name, figures in costs.components.items()]
        rows.append(("all days", "all", costs.total))
        self._table(rows)
        self.stdout.write(
            f"\nTotal: {costs.total.dollars_text}, for {costs.total.calls:,} calls. "
            f"Cache-read share: {costs.total.share_text} of the prompts' tokens were read from "
            "the cache."
        )

    def _table(self, rows: list[tuple[str, str, Figures] | None]) -> None:
        header = ("day", "component", *(title for title, _ in COLUMNS), "dollars", "read share")
        lines = [header]
        for row in rows:
            if row is None:
                lines.append(("",) * len(header))
                continue
            day, component, figures = row
            lines.append(
                (
                    day,
                    component,
                    *(f"{getattr(figures, name):,}" for _, name in COLUMNS),
                    figures.dollars_text,
                    figures.share_text,
                )
            )
        widths = [max(len(line[n]) for line in lines) for n in range(len(header))]
        for line in lines:
            cells = [
                cell.ljust(width) if n < 2 else cell.rjust(width)
                for n, (cell, width) in enumerate(zip(line, widths, strict=True))
            ]
            self.stdout.write("  ".join(cells).rstrip())
