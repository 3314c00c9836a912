"""``manage.py import_from sillytavern|card|letta|mem0 PATH [--dry-run] [--as NAME=IDENTITY …]``:
another companion's memory brought in (``transfer.bridges``, docs/bridges.md)."""

import hashlib
import os
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from silentstar.words import counted
from transfer.bridges import (
    PREVIEW_LISTED,
    BridgePlan,
    RunStopped,
    bridge_import,
    bridge_plan,
    bundle_read,
    draft_diff_listed,
    entries_left_out_said,
    file_refused,
    more_said,
    speakers_read,
)
from transfer.bundle import BridgeError
from transfer.lock import TransferBusy, one_at_a_time
from transfer.models import BridgeFormat

BAR_FROM = 2_000  # messages from which the import shows a progress bar (on a terminal)


class Command(BaseCommand):
    help = (
        "Import another companion's memory: a SillyTavern lorebook or chat, a character card "
        "(JSON, PNG or CHARX), a Letta agent file, or mem0's memories. Knowledge becomes a "
        "draft and the character a proposed wake text, for a person to apply in the Anvil; "
        "memories become suggestions of the queue; messages become events with their times. "
        "Everything is checked first; a second run adds nothing. See docs/bridges.md."
    )

    def add_arguments(self, parser):
        parser.add_argument("format", choices=BridgeFormat.values)
        parser.add_argument("path", type=Path)
        parser.add_argument(
            "--dry-run", action="store_true", help="Say what it would do; write nothing."
        )
        parser.add_argument(
            "--as",
            dest="speakers",
            action="append",
            default=[],
            metavar="NAME=IDENTITY",
            help="Who a speaker of the conversation is here (repeat for each name).",
        )

    def handle(self, *args, format, path, dry_run, speakers, verbosity, **options):
        data = file_read(path)
        try:
            bundle = bundle_read(format=format, data=data)
            plan = bridge_plan(
                bundle, file_name=path.name, format=format, speakers=speakers_read(speakers)
            )
        except BridgeError as error:
            raise CommandError(f"{path} refused, nothing imported:\n{error}") from None
        self.stdout.write(plan_said(plan))
        if dry_run:
            self.stdout.write("Dry run: nothing was written.")
            return
        bar = None

        def progress(done: int, total: int) -> None:
            nonlocal bar
            if total < BAR_FROM or verbosity < 1:
                return
            if bar is None:
                bar = tqdm(total=total, desc="messages", unit=" msg", disable=None)
            bar.update(done - bar.n)

        try:
            with one_at_a_time(what="import"):
                report = bridge_import(
                    plan, file_sha256=hashlib.sha256(data).hexdigest(), progress=progress
                )
        except RunStopped as error:
            raise CommandError(f"{path}: {error}") from None
        except (BridgeError, TransferBusy) as error:
            raise CommandError(f"{path} refused, nothing imported:\n{error}") from None
        finally:
            if bar is not None:
                bar.close()
        self.stdout.write(f"Imported {path}: {report}")


def file_read(path: Path) -> bytes:
    """The file's bytes, refused in the import page's words past ``SILENTSTAR_IMPORT_MAX_BYTES``
    or empty: its size is looked at before it is read, and at most one byte more than the limit
    is ever read (a file that grows meanwhile, a pipe), so memory stays within the limit."""
    limit = settings.IMPORT_MAX_BYTES
    try:
        with path.open("rb") as file:
            size = os.fstat(file.fileno()).st_size
            if size > limit:  # a pipe's size is 0: known only by reading it
                raise CommandError(file_refused(str(path), size=size, limit=limit))
            data = file.read(limit + 1)
    except OSError as error:
        raise CommandError(f"{path}: {error.strerror}") from None
    if refused := file_refused(str(path), size=len(data), limit=limit, more=True):
        raise CommandError(refused)
    return data


def plan_said(plan: BridgePlan) -> str:
    """The preview in words, as the Anvil's preview page says it."""
    lines = []
    if plan.draft_text:
        state = " (already proposed)" if plan.draft_here else ""
        lines.append(f"A draft of {counted(len(plan.fragments), 'fragment')}{state}:")
        if plan.draft_diff:
            listed, more = draft_diff_listed(plan.draft_diff)
            lines.append(listed.as_text() + (f"…{more}, all in the draft.\n" if more else ""))
        else:
            lines.append("")
    if plan.wake_section:
        state = " (already proposed)" if plan.wake_here else ""
        lines.append(f"A proposed addition to the wake text{state}:\n{plan.wake_section}")
    if plan.prose_section:
        state = " (already proposed)" if plan.prose_here else ""
        lines.append(f"A proposed addition to the ambient prose{state}:\n{plan.prose_section}")
    if plan.greeting:
        state = " (already proposed)" if plan.greeting_here else ""
        lines.append(f"A proposed greeting{state}:\n{plan.greeting}")
    if plan.suggestions:
        lines.append(
            f"{len(plan.suggestions_new)} memories to stage as suggestions "
            f"({len(plan.suggestions) - len(plan.suggestions_new)} already here):"
        )
        lines += [
            f"  {s.type}: {s.content}" + (f" (due {s.due:%Y-%m-%d %H:%M})" if s.due else "")
            for s in plan.suggestions_new[:PREVIEW_LISTED]
        ]
        if more := more_said(len(plan.suggestions_new), "memory", "memories"):
            lines.append(f"  …{more}")
    if plan.bundle.messages:
        lines.append(
            f"{len(plan.messages_new):,} messages to log as events "
            f"({len(plan.messages_here):,} already here), {len(plan.turns):,} "
            f"turn{'s' * (len(plan.turns) != 1)}."
        )
        for speaker in plan.speakers:
            said_by = speaker.identity or "? (name an identity with --as)"
            lines.append(f"  {speaker.name} ({speaker.side}, {speaker.messages:,}) → {said_by}")
        estimate = plan.estimate
        if estimate.turns:
            lines.append(
                f"Compressing them, the Mirror would make {estimate.calls:,} to "
                f"{estimate.calls_most:,} calls: "
                f"about ${estimate.cost_about:,.2f}, at most ${estimate.cost_most:,.2f}"
                + (f" (no price for {', '.join(estimate.unpriced)})" if estimate.unpriced else "")
                + "."
            )
    lines += [f"Left out: {note}" for note in plan.bundle.skipped]
    lines += [
        f"Left out: {said}." for said in entries_left_out_said(plan.left_out[:PREVIEW_LISTED])
    ]
    if more := more_said(len(plan.left_out), "entry left out", "entries left out"):
        lines.append(f"  …{more}")
    lines += [f"Refused: {problem}" for problem in plan.problems]
    if plan.is_empty:
        lines.append("Nothing new: everything in this file is here already.")
    return "\n".join(lines)
