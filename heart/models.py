"""The Heart's own record: what Claude received for each turn (``ContextSnapshot``, in the
``snapshots`` store). The event log and the turns are the ``events`` app's."""

from django.db import models
from django.utils import timezone


class ContextSnapshot(models.Model):
    """Exactly what Claude received for a turn, and why. Kept for a number of days."""

    turn = models.PositiveBigIntegerField(db_index=True, help_text="Id of the Turn (events store).")
    ts = models.DateTimeField(default=timezone.now, db_index=True)
    assembled_system = models.TextField()
    assembled_user = models.TextField()
    token_counts = models.JSONField(default=dict)
    items_included = models.JSONField(default=dict)
    inputs = models.JSONField(
        default=dict,
        blank=True,
        help_text="What the context was assembled from besides the stores (heart.context).",
    )

    class Meta:
        ordering = ["-ts", "-id"]

    def __str__(self):
        return f"snapshot of turn {self.turn} at {self.ts:%Y-%m-%d %H:%M}"
