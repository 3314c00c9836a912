from django.core.management.base import BaseCommand

from silentstar.schedules import schedules_ensure


class Command(BaseCommand):
    help = "Create or update the recurring background tasks (decay sweep, turn recovery, pruning)."

    def handle(self, *args, **options):
        for name in schedules_ensure():
            self.stdout.write(f"Scheduled: {name}")
