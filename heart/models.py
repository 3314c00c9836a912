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


class PushSubscription(models.Model):
    """A device that asked to be told when the companion writes first (``heart/push.py``): the
    address its browser's push service gave it, and the keys a notification is encrypted with.
    One per device: subscribing again from it updates the row. Kept with the installation, and
    so in its backups, but never in an export (docs/nudges.md)."""

    endpoint = models.TextField(unique=True, help_text="Where its push service takes a push.")
    p256dh = models.CharField(max_length=100, help_text="The device's public key (base64url).")
    auth = models.CharField(max_length=50, help_text="The device's auth secret (base64url).")
    device = models.CharField(
        max_length=200, blank=True, help_text="The device as its browser names itself."
    )
    show_words = models.BooleanField(
        default=False, help_text="The notification shows the first words of her message."
    )
    created_at = models.DateTimeField(default=timezone.now)
    last_sent_at = models.DateTimeField(null=True, blank=True)
    failures = models.PositiveIntegerField(
        default=0, help_text="Notifications that failed in a row."
    )

    class Meta:
        ordering = ["-created_at", "-id"]
        verbose_name = "push subscription"

    def __str__(self):
        return self.device or f"device {self.pk}"


class PushStatus(models.TextChoices):
    QUEUED = "queued"
    SENDING = "sending"
    SENT = "sent"
    FAILED = "failed"
    GONE = "gone", "gone (the device unsubscribed)"


class PushDelivery(models.Model):
    """One notification to one device: sent at most once (one row per device and ``ref``)."""

    subscription = models.ForeignKey(
        PushSubscription,
        null=True,
        on_delete=models.SET_NULL,
        related_name="deliveries",
        help_text="Empty once the device is removed.",
    )
    ref = models.CharField(max_length=100, help_text='What was sent: "nudge:12".')
    payload = models.JSONField(default=dict, help_text="The notification, before encryption.")
    status = models.CharField(max_length=10, choices=PushStatus, default=PushStatus.QUEUED)
    attempts = models.PositiveSmallIntegerField(default=0)
    error = models.TextField(blank=True, help_text="Why the last attempt failed.")
    created_at = models.DateTimeField(default=timezone.now)
    sent_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        verbose_name_plural = "push deliveries"
        constraints = [
            models.UniqueConstraint(fields=["subscription", "ref"], name="push_delivery_once")
        ]

    def __str__(self):
        return f"{self.ref} to {self.subscription or 'a removed device'}"
