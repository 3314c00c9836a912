"""manage.py inspect TURN [--text]: why she knew what she knew on a turn, as plain text.

What the Anvil's context inspector shows (``heart.inspect``): each section's tokens against its
budget, what was included, what was left out and why, the prompt cache, and what changed since
the turn before; with ``--text``, the exact system and user text Claude received."""

from django.core.management.base import BaseCommand, CommandError

from events.models import Turn
from heart.inspect import Bar, Inspection, turn_inspection

INDENT = "  "


class Command(BaseCommand):
    help = (
        "Why the companion knew what it knew on a turn: the context's sections with their "
        "tokens and budgets, what was included, what was left out and why, and the cache."
    )

    def add_arguments(self, parser):
        parser.add_argument("turn", type=int, help="The turn's id (the Anvil's Turns list).")
        parser.add_argument(
            "--text",
            action="store_true",
            help="Print the exact system and user text Claude received, too.",
        )

    def handle(self, *args, turn: int, text: bool, **options):
        found = Turn.objects.select_related("event").filter(pk=turn).first()
        if found is None:
            raise CommandError(f"No turn {turn}: give the id of a turn (the Anvil lists them).")
        inspection = turn_inspection(turn=found)
        self.stdout.write("\n".join(inspection_text(inspection, with_text=text)))


def inspection_text(inspection: Inspection, *, with_text: bool = False) -> list[str]:
    turn, lines = inspection.turn, []
    record = f" (record {turn.pk})" if turn.number != turn.pk else ""
    lines.append(f"Turn {turn.number}{record}, {turn.status}" + _model(inspection))
    said = _one_line(turn.event.content) if turn.event is not None else "(none: no message)"
    lines.append(f"Message: {said}")
    neighbours = [
        f"{name} turn: id {other.pk}"
        for name, other in (("previous", inspection.previous_turn), ("next", inspection.next_turn))
        if other is not None
    ]
    if neighbours:
        lines.append(", ".join(neighbours).capitalize())
    if inspection.snapshot is None:
        return [*lines, "", inspection.absent]
    if inspection.at is not None:
        lines.append(f"Assembled at {inspection.at.isoformat(timespec='seconds')}")
    if inspection.missing:
        lines += ["", "This snapshot is older than some records; it does not say:"]
        lines += [f"{INDENT}- {missing}" for missing in inspection.missing]
    lines += ["", "Sections (estimated tokens / budget; budgets as set now)"]
    lines += [INDENT + _bar(bar) for bar in inspection.bars]
    lines.append(f"{INDENT}Total: {inspection.total_tokens:,} tokens")
    if inspection.pools:
        lines.append(INDENT + "Recent's pools: " + "; ".join(_bar(bar) for bar in inspection.pools))
    lines += ["", "Included", *_included(inspection)]
    lines += ["", "Left out"]
    for section, items in inspection.left_out_by_section:
        lines.append(f"{INDENT}{section}")
        lines += [f"{INDENT * 2}{item.label}: {item.reason}" for item in items]
    if not inspection.left_out:
        lines.append(f"{INDENT}nothing")
    lines += ["", "Cache", *_cache(inspection)]
    if inspection.previous_snapshot is not None:
        lines += ["", f"Since the turn before (id {inspection.previous_snapshot.turn})"]
        for change in inspection.changed:
            moved = f": {'; '.join(change.items)}" if change.items else ""
            lines.append(f"{INDENT}{change.name} {change.status}{moved}")
        if not inspection.changed:
            lines.append(f"{INDENT}nothing changed")
    if with_text:
        snapshot = inspection.snapshot
        lines += ["", "System text", snapshot.assembled_system, "", "User text"]
        lines.append(snapshot.assembled_user)
    return lines


def _model(inspection: Inspection) -> str:
    model = inspection.turn.model
    return f", answered by {model}" if model else ""


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _bar(bar: Bar) -> str:
    if bar.budget is None:
        return f"{bar.name}: {bar.tokens:,}"
    return f"{bar.name}: {bar.tokens:,} / {bar.budget:,} tokens ({bar.percent_text})"


def _included(inspection: Inspection) -> list[str]:
    lines = [f"{INDENT}Lingering"]
    for item in inspection.lingering:
        label = f"{item.type}: {item.subject}" if item.subject else item.type
        score = f" (score {item.score:g})" if item.score is not None else ""
        cut = " (cut to fit)" if item.cut else ""
        what = f"[{label}] {_one_line(item.content)}" if item.found else "(no longer kept)"
        lines.append(f"{INDENT * 2}#{item.id} {what}{score}{cut}")
    lines.append(f"{INDENT}Summaries")
    for summary in inspection.summaries:
        cut = " (cut to fit)" if summary.cut else ""
        span = f"events {summary.first_event_id}–{summary.last_event_id}"
        lines.append(f"{INDENT * 2}#{summary.id} {summary.level}, {span}{cut}")
    if inspection.unsummarised:
        first, last = inspection.unsummarised
        lines.append(f"{INDENT * 2}not summarised yet: events {first}–{last}")
    lines.append(f"{INDENT}Recalled")
    for recalled in inspection.recalled:
        cut = " (cut to fit)" if recalled.cut else ""
        why = f", {recalled.why}" if recalled.why else ""
        lines.append(f"{INDENT * 2}{recalled.key} ({recalled.tier}{why}){cut}")
    lines.append(f"{INDENT}Found for the message")
    for found in inspection.found:
        cut = " (cut to fit)" if found.cut else ""
        lines.append(f"{INDENT * 2}{found.key}{cut}")
    recent = inspection.recent
    if recent is not None:
        lines.append(f"{INDENT}Recent")
        if recent.events:
            pools = ", ".join(f"{pool} {count}" for pool, count in recent.pools.items())
            lines.append(
                f"{INDENT * 2}events {recent.first_event_id}–{recent.last_event_id}: "
                f"{recent.events} events ({pools}; {recent.flex} carried by flex)"
            )
        if recent.movement:
            lines.append(f"{INDENT * 2}{recent.movement}")
    if inspection.outside_recent:
        lines.append(f"{INDENT}Outside Recent: {inspection.outside_recent}")
    return lines


def _cache(inspection: Inspection) -> list[str]:
    cache, lines = inspection.cache, []
    for breakpoint_ in inspection.breakpoints:
        lines.append(
            f"{INDENT}after {breakpoint_.where} ({breakpoint_.part} block {breakpoint_.block}, "
            f"{breakpoint_.ttl}, about {breakpoint_.prefix_tokens:,} tokens): "
            f"{breakpoint_.sentence}"
        )
    if cache.offline:
        lines.append(f"{INDENT}Answered offline: nothing was sent to Claude.")
    elif cache.recorded:
        lines.append(
            f"{INDENT}Read {cache.read:,}, written {cache.written:,}, uncached "
            f"{cache.uncached:,} tokens: {cache.read_percent}% read from the cache "
            f"(minimum prefix for {cache.minimum_model}: {cache.minimum:,})."
        )
    else:
        lines.append(f"{INDENT}The turn recorded no usage.")
    return lines
