"""The Mirror's output (``summaries`` store): summaries, staged tag suggestions, runs.

Event and working-memory references are plain integer ids: they live in other stores.
"""

from django.db import models
from django.utils import timezone

from gem.models import WorkingMemoryType


class SummaryLevel(models.TextChoices):
    L0 = "L0", "L0 — one chunk"
    L1 = "L1", "L1 — three L0"
    L2 = "L2", "L2 — three L1"


class Summary(models.Model):
    """A compressed reflection of an exact range of events, at one merge level."""

    level = models.CharField(max_length=2, choices=SummaryLevel, db_index=True)
    first_event_id = models.PositiveBigIntegerField(db_index=True)
    last_event_id = models.PositiveBigIntegerField(db_index=True)
    content = models.TextField()
    tokens = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(default=timezone.now)
    superseded_by = models.ForeignKey(
        "self", on_delete=models.PROTECT, null=True, blank=True, related_name="supersedes"
    )

    class Meta:
        verbose_name_plural = "summaries"
        ordering = ["first_event_id", "level", "id"]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(level__in=SummaryLevel.values), name="mirror_summary_level_valid"
            ),
            models.CheckConstraint(
                condition=models.Q(first_event_id__lte=models.F("last_event_id")),
                name="mirror_summary_range_ordered",
            ),
        ]

    def __str__(self):
        return f"{self.level} events {self.first_event_id}–{self.last_event_id}"


class SuggestionStatus(models.TextChoices):
    PENDING = "pending"
    PROMOTED = "promoted"
    REJECTED = "rejected"


class TagSuggestion(models.Model):
    """A working-memory item the Mirror proposes; a person promotes or rejects it."""

    summary = models.ForeignKey(Summary, on_delete=models.PROTECT, related_name="suggestions")
    type = models.CharField(max_length=8, choices=WorkingMemoryType)
    content = models.TextField()
    subject = models.CharField(max_length=200, blank=True)
    status = models.CharField(
        max_length=8, choices=SuggestionStatus, default=SuggestionStatus.PENDING, db_index=True
    )
    promoted_wm_id = models.PositiveBigIntegerField(
        null=True, blank=True, help_text="Id of the working-memory item it became (default store)."
    )
    created_at = models.DateTimeField(default=timezone.now)
    decided_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(type__in=WorkingMemoryType.values),
                name="mirror_suggestion_type_valid",
            ),
            models.CheckConstraint(
                condition=models.Q(status__in=SuggestionStatus.values),
                name="mirror_suggestion_status_valid",
            ),
        ]

    def __str__(self):
        return f"{self.type}: {self.content[:60]} ({self.status})"


class MirrorRun(models.Model):
    """One run of the Mirror; a row without ``completed_at`` is a run that crashed."""

    started_at = models.DateTimeField(default=timezone.now)
    completed_at = models.DateTimeField(null=True, blank=True)
    kind = models.CharField(max_length=20, help_text="scheduled, manual or rebuild")
    route = models.CharField(max_length=20, blank=True, help_text="two-pass or three-pass")
    error = models.TextField(blank=True)

    class Meta:
        ordering = ["-started_at", "-id"]

    def __str__(self):
        state = "done" if self.completed_at else "unfinished"
        return f"{self.kind} run {self.started_at:%Y-%m-%d %H:%M} ({state})"
