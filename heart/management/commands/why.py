from django.core.management.base import BaseCommand, CommandError

from heart.why import TURNS_DEFAULT, WhyError, why


class Command(BaseCommand):
    help = (
        "Say, for the last turns, whether a working-memory item (#12), a fragment key or some "
        "words were in the context, and if not, why."
    )

    def add_arguments(self, parser):
        parser.add_argument("asked", nargs="+", help="#12, a fragment key, or some words.")
        parser.add_argument(
            "--turns",
            type=int,
            default=TURNS_DEFAULT,
            help=f"How many of the last turns to look at (default {TURNS_DEFAULT}).",
        )

    def handle(self, *args, **options):
        try:
            answer = why(" ".join(options["asked"]), turns=options["turns"])
        except WhyError as error:
            raise CommandError(str(error)) from error
        self.stdout.write(f"Why didn't she know {answer.what}?")
        if not answer.verdicts:
            self.stdout.write("No turn has a snapshot yet.")
        for verdict in answer.verdicts:
            self.stdout.write(
                f"turn {verdict.number} ({verdict.at:%Y-%m-%d %H:%M}): {verdict.answer}. "
                f"{verdict.reason}"
            )
