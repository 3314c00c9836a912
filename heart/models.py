"""The Heart's own record: what Claude received for each turn (``ContextSnapshot``, in the
``snapshots`` store). The event log and the turns are the ``events`` app's."""

from django.db import models
from django.utils import timezone

from silentstar.when import when


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
        return f"snapshot of turn {self.turn} at {when(self.ts)}"

    def working_memory_active(self) -> list[int]:
        """The ids of the working memory active at the turn: every active item was a candidate,
        included or left out (under the floor, a near miss, or further down); [] for a
        snapshot taken before it kept what it left out."""
        included = self.items_included
        left = included.get("left_out")
        if left is None:
            return []
        further = left.get("lingering_further", [])  # absent before it was kept apart
        return [*included["lingering"], *(item["id"] for item in left["lingering"]), *further]
