"""The Loom's rows (``default`` store, beside the fragments they work on): crystallizing
sessions, the photo inbox, the facet agents' calls and their versioned prompts.

A call's staged pattern suggestions live in the ``summaries`` store (``mirror.TagSuggestion``):
the call keeps their ids as a plain list.
"""

from datetime import datetime, timedelta

from django.conf import settings
from django.db import models
from django.utils import timezone

from gem.models import Fragment, VersionedText
from silentstar.when import when


class SessionStatus(models.TextChoices):
    OPEN = "open"
    CLOSED = "closed"


class Session(models.Model):
    """A named workspace kept across visits until a person closes it; a closed session stays
    readable, nothing in it is deleted."""

    topic = models.CharField(max_length=200)
    status = models.CharField(
        max_length=6, choices=SessionStatus, default=SessionStatus.OPEN, db_index=True
    )
    fragments = models.ManyToManyField(Fragment, blank=True, related_name="loom_sessions")
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)
    closed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-updated_at", "-id"]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(status__in=SessionStatus.values),
                name="loom_session_status_valid",
                violation_error_message="The status must be one of those offered.",
            ),
        ]

    def __str__(self):
        return self.topic

    @property
    def is_open(self) -> bool:
        return self.status == SessionStatus.OPEN


class InboxImage(models.Model):
    """A photo uploaded from a phone, waiting for a session to take it."""

    image = models.FileField(max_length=255)
    original_name = models.CharField(max_length=255, blank=True)
    uploaded_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-uploaded_at", "-id"]
        verbose_name = "inbox photo"

    def __str__(self):
        return self.original_name or self.image.name


class SessionImage(models.Model):
    """A photo a session took from the inbox, its file under the session's folder."""

    session = models.ForeignKey(Session, on_delete=models.PROTECT, related_name="images")
    image = models.FileField(max_length=255)
    original_name = models.CharField(max_length=255, blank=True)
    uploaded_at = models.DateTimeField(help_text="When it reached the inbox.")
    taken_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["taken_at", "id"]

    def __str__(self):
        return self.original_name or self.image.name


class Agent(models.TextChoices):
    CATALOGUER = "cataloguer", "the Cataloguer"
    WEAVER = "weaver", "the Weaver"
    RESEARCHER = "researcher", "the Researcher"


class CallStatus(models.TextChoices):
    QUEUED = "queued"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"


class DraftState(models.TextChoices):
    PROPOSED = "proposed"
    APPLIED = "applied"
    DROPPED = "dropped"


def stalled_before(now: datetime) -> datetime:
    """A call running since before this has outlived the worker's task timeout: its worker
    stopped (django-q2 ends a task at its timeout), so it may be taken again."""
    return now - timedelta(seconds=settings.Q_CLUSTER["timeout"])


class LoomCall(models.Model):
    """One question to a facet agent about one fragment: its notes and draft once done.

    ``sources`` says what the agent read: ``fragment``, ``neighbours`` (keys), ``images``
    (session image ids) and, for the Researcher, ``web_search`` (``offered``, ``searches``).
    The draft waits (``proposed``) until a person applies or drops it.
    """

    session = models.ForeignKey(
        Session, on_delete=models.PROTECT, null=True, blank=True, related_name="calls"
    )
    agent = models.CharField(max_length=10, choices=Agent)
    fragment_key = models.CharField(max_length=100)
    question = models.TextField(blank=True)
    images = models.ManyToManyField(SessionImage, blank=True, related_name="calls")
    status = models.CharField(
        max_length=7, choices=CallStatus, default=CallStatus.QUEUED, db_index=True
    )
    error = models.TextField(blank=True)
    notes = models.TextField(blank=True)
    draft = models.TextField(blank=True, help_text="The agent's draft, in the draft format.")
    draft_base = models.TextField(
        blank=True,
        help_text="What the draft was written against: the Lens extract the agent read.",
    )
    sources = models.JSONField(default=dict, blank=True)
    draft_state = models.CharField(max_length=8, choices=DraftState, blank=True)
    applied_text = models.TextField(
        blank=True, help_text="The draft as a person edited it before applying (empty: as is)."
    )
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True
    )
    decided_at = models.DateTimeField(null=True, blank=True)
    suggestion_ids = models.JSONField(
        default=list, blank=True, help_text="Pattern suggestions staged (summaries store)."
    )
    created_at = models.DateTimeField(default=timezone.now)
    started_at = models.DateTimeField(
        null=True, blank=True, help_text="When a worker last took it."
    )
    finished_at = models.DateTimeField(null=True, blank=True)
    attempts = models.PositiveSmallIntegerField(default=0)

    class Meta:
        ordering = ["-created_at", "-id"]
        verbose_name = "Loom call"
        constraints = [
            models.CheckConstraint(
                condition=models.Q(agent__in=Agent.values),
                name="loom_call_agent_valid",
                violation_error_message="The agent must be one of those offered.",
            ),
            models.CheckConstraint(
                condition=models.Q(status__in=CallStatus.values),
                name="loom_call_status_valid",
                violation_error_message="The status must be one of those offered.",
            ),
            models.CheckConstraint(
                condition=models.Q(draft_state__in=["", *DraftState.values]),
                name="loom_call_draft_state_valid",
                violation_error_message="The draft's state must be one of those offered.",
            ),
        ]

    def __str__(self):
        return f"{self.get_agent_display()} on {self.fragment_key} ({self.status})"

    @property
    def is_pending(self) -> bool:
        return self.status in (CallStatus.QUEUED, CallStatus.RUNNING)

    def is_stalled(self, *, now: datetime) -> bool:
        """Running for longer than a worker may run a task: its worker stopped."""
        return (
            self.status == CallStatus.RUNNING
            and self.started_at is not None
            and self.started_at < stalled_before(now)
        )


class LoomPrompt(VersionedText):
    """One saved version of a facet agent's instructions; the newest of a kind is used."""

    kind = models.CharField(max_length=10, choices=Agent)
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True
    )

    class Meta:
        ordering = ["kind", "-created_at", "-id"]
        verbose_name = "Loom prompt"
        constraints = [
            models.CheckConstraint(
                condition=models.Q(kind__in=Agent.values),
                name="loom_prompt_kind_valid",
                violation_error_message="The kind must be one of those offered.",
            ),
        ]

    text_fields = ("kind",)

    def __str__(self):
        return f"{self.get_kind_display()} of {when(self.created_at)}"
