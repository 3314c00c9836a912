from django.core.management.base import BaseCommand, CommandError

from mirror.models import MirrorRunStatus
from mirror.rebuild import RebuildError, rebuild_apply, rebuild_plan
from mirror.run import MANUAL, mirror_run

ROLES = ("clean", "compress", "summarise", "merge")


class Command(BaseCommand):
    help = (
        "The Mirror by hand. `mirror run`: reflect the pending turns if the trigger fires "
        "(`--force`: whatever the trigger says). `mirror rebuild [--from ID] [--to ID] "
        "[--dry-run]`: regenerate the summaries of that event range from the raw events, show "
        "old against new, then replace them (the old ones are kept, marked superseded)."
    )

    def add_arguments(self, parser):
        parser.add_argument("action", choices=["run", "rebuild"])
        parser.add_argument("--force", action="store_true", help="run: ignore the trigger")
        parser.add_argument("--from", dest="first", type=int, help="rebuild: first event id")
        parser.add_argument("--to", dest="last", type=int, help="rebuild: last event id")
        parser.add_argument(
            "--dry-run", action="store_true", help="rebuild: show old against new, change nothing"
        )

    def handle(self, *args, action, force, first, last, dry_run, **options):
        if action == "run":
            self._run(force=force)
        else:
            self._rebuild(first=first, last=last, dry_run=dry_run)

    def _run(self, *, force: bool) -> None:
        run = mirror_run(kind=MANUAL, force=force)
        if run is None:
            held = "" if force else ", or the trigger holds (use --force to run anyway)"
            self.stdout.write(
                f"The Mirror did not run: nothing is pending{held}, or another run is under way."
            )
            return
        summaries = run.summaries.order_by("first_event_id", "level")
        for summary in summaries:
            self.stdout.write(f"{summary} ({summary.tokens} tokens)")
        self.stdout.write(self._usage_line(run.usage))
        if run.status != MirrorRunStatus.DONE:
            raise CommandError(f"Mirror run {run.pk} {run.get_status_display()}: {run.error}")
        self.stdout.write(f"Mirror run {run.pk} done ({run.route or 'nothing to do'}).")

    def _rebuild(self, *, first: int | None, last: int | None, dry_run: bool) -> None:
        if first is not None and last is not None and first > last:
            raise CommandError(f"--from ({first}) must not be after --to ({last})")
        plan = rebuild_plan(first=first, last=last)
        if not plan.replacements:
            self.stdout.write("No current summary lies in that range: nothing to rebuild.")
            return
        for replacement in plan.replacements:
            old = replacement.old
            self.stdout.write(f"\n=== {old} (summary {old.pk}, {replacement.route})")
            self.stdout.write(replacement.diff() or "(unchanged)")
            for suggestion in replacement.suggestions:
                subject = f" ({suggestion.subject})" if suggestion.subject else ""
                self.stdout.write(f"  suggests {suggestion.type}{subject}: {suggestion.content}")
        self.stdout.write("\n" + self._usage_line(plan.usage))
        if dry_run:
            self.stdout.write(
                f"Dry run: {len(plan.replacements)} summaries would be replaced; "
                "nothing was changed."
            )
            return
        try:
            run = rebuild_apply(plan=plan)
        except RebuildError as error:
            raise CommandError(str(error)) from error
        self.stdout.write(
            f"Replaced {len(plan.replacements)} summaries (rebuild run {run.pk}); "
            "the old ones are kept, marked superseded."
        )

    def _usage_line(self, usage: dict) -> str:
        parts = [
            f"{role} {u['calls']}× {u['model']} ({u['input_tokens']} in, {u['output_tokens']} out)"
            for role in ROLES
            if (u := usage.get(role))
        ]
        return "Passes: " + ("; ".join(parts) if parts else "none")
