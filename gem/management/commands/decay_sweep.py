from django.core.management.base import BaseCommand
from django.utils import timezone

from gem.services import working_memory_sweep
from gem.state import turn_counter_current
from silentstar.words import counted


class Command(BaseCommand):
    help = "Mark working memory that has faded below the threshold for good as decayed."

    def handle(self, *args, **options):
        gone = working_memory_sweep(now=timezone.now(), current_turn=turn_counter_current())
        self.stdout.write(f"Marked {counted(len(gone), 'working-memory item')} decayed.")
