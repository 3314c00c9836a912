"""The event log: every message exactly as written (``Event``, append-only, with its ``EventTag``s),
the corrections appended beside it (``Correction``, append-only too), and the turns that answer
the person's messages (``Turn``), all in the ``events`` store.

The tables keep the names they were created with (``heart_event``, ``heart_eventtag``,
``heart_turn``): the models came here from the Heart, the rows never moved.
"""

from django.db import models
from django.utils import timezone

from events import corrected
from silentstar.when import when


class AppendOnlyError(Exception):
    """Raised on any attempt to change or remove a row of the event log."""


class AppendOnlyQuerySet(models.QuerySet):
    def update(self, **kwargs):
        raise AppendOnlyError(f"{self.model.__name__} rows are append-only: update refused")

    def delete(self):
        raise AppendOnlyError(f"{self.model.__name__} rows are append-only: delete refused")

    def bulk_update(self, objs, fields, batch_size=None):
        raise AppendOnlyError(f"{self.model.__name__} rows are append-only: update refused")

    def update_or_create(self, defaults=None, create_defaults=None, **kwargs):
        raise AppendOnlyError(f"{self.model.__name__} rows are append-only: update refused")


class AppendOnlyModel(models.Model):
    """A row that can be inserted once and never changed or deleted."""

    objects = AppendOnlyQuerySet.as_manager()

    class Meta:
        abstract = True

    def save(self, *args, **kwargs):
        if not self._state.adding:
            raise AppendOnlyError(f"{type(self).__name__} {self.pk} is append-only: update refused")
        kwargs["force_insert"] = True
        super().save(*args, **kwargs)

    def delete(self, *args, **kwargs):
        raise AppendOnlyError(f"{type(self).__name__} {self.pk} is append-only: delete refused")


class Event(AppendOnlyModel):
    """One message, exactly as written: the source of truth for everything else."""

    ts = models.DateTimeField(default=timezone.now, db_index=True)
    content = models.TextField()
    actor = models.CharField(max_length=64, blank=True, db_index=True)
    image = models.FileField(upload_to="images/%Y/%m/", blank=True, max_length=255)

    class Meta:
        db_table = "heart_event"
        ordering = ["ts", "id"]

    def __str__(self):
        return f"#{self.pk} {self.actor or '—'} {when(self.ts)}"


class EventTag(AppendOnlyModel):
    """A tag seen on an event (display, identity or knowledge): inert data."""

    event = models.ForeignKey(Event, on_delete=models.PROTECT, related_name="tags")
    tag = models.CharField(max_length=64, db_index=True)

    class Meta:
        db_table = "heart_eventtag"
        constraints = [
            models.UniqueConstraint(
                fields=["event", "tag"], name="heart_eventtag_unique_event_tag"
            ),
        ]

    def __str__(self):
        return f"{self.tag} on #{self.event_id}"


class CorrectionKind(models.TextChoices):
    EDIT = corrected.EDIT
    ATTRIBUTION = corrected.ATTRIBUTION
    RETRACTION = corrected.RETRACTION
    RESTORATION = corrected.RESTORATION
    ASIDE = corrected.ASIDE
    CHOSEN = corrected.CHOSEN


class Correction(AppendOnlyModel):
    """A correction of one event, appended beside it: the event itself never changes, and
    every reader follows the view the corrections give it (``events.corrected``). Written by
    ``events.corrections.correction_make`` alone."""

    event = models.ForeignKey(Event, on_delete=models.PROTECT, related_name="corrections")
    sequence = models.PositiveIntegerField(
        help_text="How many corrections of the event came before this one: of two made at "
        "once, only one can be the next."
    )
    kind = models.CharField(max_length=12, choices=CorrectionKind)
    text = models.TextField(blank=True, help_text="An edit's new text, tags and all.")
    actor = models.CharField(max_length=64, blank=True, help_text="A re-attribution's speaker.")
    made_by = models.CharField(max_length=150, help_text="Who made it: a username.")
    made_at = models.DateTimeField(default=timezone.now, db_index=True)

    class Meta:
        db_table = "events_correction"
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(
                fields=["event", "sequence"], name="events_correction_one_next"
            ),
            models.CheckConstraint(
                condition=models.Q(kind__in=CorrectionKind.values),
                name="events_correction_kind_valid",
            ),
        ]

    def __str__(self):
        return f"{self.kind} of #{self.event_id} by {self.made_by}"

    @property
    def step(self) -> corrected.Step:
        return corrected.Step(self.kind, self.text, self.actor)


class Purge(AppendOnlyModel):
    """The one exception to the append-only log, itself logged: a retracted event's text and
    image blanked, with the same text wherever it was copied, by the owner
    (``heart.corrections.event_purge``). The database lets a row of the log (and the text of
    its corrections) change only this way: to nothing, once a purge of it is recorded."""

    event = models.OneToOneField(Event, on_delete=models.PROTECT, related_name="purge")
    purged_by = models.CharField(max_length=150, help_text="Who purged it: a username.")
    purged_at = models.DateTimeField(default=timezone.now)
    blanked = models.JSONField(
        default=dict, help_text="Where its text was blanked: copies by place, counted."
    )

    class Meta:
        db_table = "events_purge"

    def __str__(self):
        return f"purge of #{self.event_id} by {self.purged_by}"


class TurnStatus(models.TextChoices):
    QUEUED = "queued"
    RUNNING = "running"
    DONE = "done"
    ERROR = "error"


class Turn(models.Model):
    """One job of the Heart: a reply to the person's event. Several turns may answer one event
    (asked again: ``again_of`` names the turn before), of which one reply counts (the others
    set aside by corrections, ``events.corrected``); a turn the companion starts has no event."""

    event = models.ForeignKey(
        Event, on_delete=models.PROTECT, null=True, blank=True, related_name="turns"
    )
    again_of = models.ForeignKey(
        "self",
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="asked_again",
        help_text="The turn whose reply this one asks for again.",
    )
    status = models.CharField(
        max_length=8, choices=TurnStatus, default=TurnStatus.QUEUED, db_index=True
    )
    reply_event = models.OneToOneField(
        Event, on_delete=models.PROTECT, null=True, blank=True, related_name="reply_to_turn"
    )
    number = models.PositiveIntegerField(help_text="The turn counter when this message arrived.")
    partial_text = models.TextField(
        blank=True, help_text="Reply text received so far while streaming."
    )
    error = models.TextField(blank=True)
    retrying = models.CharField(
        max_length=300,
        blank=True,
        help_text="While Claude's API is tried again: what went wrong, and when the next try is.",
    )
    attempts = models.PositiveSmallIntegerField(default=0)
    model = models.CharField(max_length=100, blank=True)
    queued_at = models.DateTimeField(default=timezone.now)
    started_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(
        null=True,
        blank=True,
        help_text="Last sign of life of the worker answering: its claim, then each streamed save.",
    )
    first_token_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    input_tokens = models.PositiveIntegerField(null=True, blank=True)
    output_tokens = models.PositiveIntegerField(null=True, blank=True)
    cache_read_tokens = models.PositiveIntegerField(null=True, blank=True)
    cache_write_tokens = models.PositiveIntegerField(null=True, blank=True)

    class Meta:
        db_table = "heart_turn"
        ordering = ["queued_at", "id"]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(status__in=TurnStatus.values),
                name="heart_turn_status_valid",
            ),
        ]

    def __str__(self):
        return f"turn {self.number} ({self.status})"


class NudgeReason(models.TextChoices):
    """Why the companion may write first: each off until the person turns it on."""

    PLAN = "plan", "a plan coming due"
    SILENCE = "silence", "a long silence"
    PROPOSALS = "proposals", "the Compass's proposals waiting"


class NudgeStatus(models.TextChoices):
    WAITING = "waiting"  # held back (quiet hours, the day's cap…): sent later if it still holds
    SENT = "sent"  # its turn is queued or answered
    CANCELLED = "cancelled"  # the person wrote first, or the reason no longer holds


class Nudge(models.Model):
    """A reason for the companion to write first, about one thing, decided once.

    ``thing`` names what the reason is about (a plan and its due date, the person's last message
    before a silence, the newest of a batch of proposals): one row per reason and thing, so a
    reason fires at most once for the same thing, whichever worker decides it. ``said`` is the
    reason in words, as her context gives it. Sent, it is a turn without a message (``turn``)."""

    reason = models.CharField(max_length=10, choices=NudgeReason)
    thing = models.CharField(max_length=100)
    said = models.TextField(help_text="The reason in words, as her context says it.")
    status = models.CharField(
        max_length=9, choices=NudgeStatus, default=NudgeStatus.WAITING, db_index=True
    )
    held = models.CharField(
        max_length=200, blank=True, help_text="Why it waits, while it waits: the rule holding it."
    )
    found_at = models.DateTimeField(default=timezone.now)
    decided_at = models.DateTimeField(null=True, blank=True)
    turn = models.OneToOneField(
        Turn, on_delete=models.PROTECT, null=True, blank=True, related_name="nudge"
    )

    class Meta:
        db_table = "heart_nudge"
        ordering = ["found_at", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["reason", "thing"],
                name="heart_nudge_once_per_thing",
                violation_error_message="This reason was already found for this.",
            ),
            models.CheckConstraint(
                condition=models.Q(status__in=NudgeStatus.values), name="heart_nudge_status_valid"
            ),
        ]

    def __str__(self):
        return f"nudge {self.pk}: {self.get_reason_display()} ({self.status})"
