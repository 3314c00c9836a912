from django.core.management.base import BaseCommand

from silentstar.schedules import schedules_ensure


class Command(BaseCommand):
    help = "Create or update the recurring background tasks (decay sweep, turn recovery, pruning)."

    def handle(self, *args, verbosity, **options):
        for name in schedules_ensure():
            if verbosity >= 1:
                self.stdout.write(f"Scheduled: {name}")
