"""The Compass's consultations (``summaries`` store): what a person asked, or the weekly review,
what the Compass answered, and the plans it proposed, each a suggestion of the Mirror's queue.

The person who asked is kept by user name: accounts live in the ``default`` store.
"""

from django.db import models
from django.utils import timezone
from django.utils.text import Truncator

from gem.models import VersionedText
from mirror.models import TagSuggestion
from silentstar.when import when


class ConsultationKind(models.TextChoices):
    CONSULT = "consult", "consultation"
    REVIEW = "review", "weekly review"


class ConsultationStatus(models.TextChoices):
    QUEUED = "queued"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"


class Consultation(models.Model):
    """One question put to the Compass (or one weekly review) and its answer.

    A consultation is queued, claimed by a worker (running), and then either done, with its
    reasoning and its proposals staged, or failed, with an error a person can read and retry
    from. Its proposals are staged in the same transaction that marks it done: a failed
    consultation has none.
    """

    kind = models.CharField(
        max_length=8, choices=ConsultationKind, default=ConsultationKind.CONSULT, db_index=True
    )
    question = models.TextField(blank=True, help_text="What the person asked (none: a review).")
    status = models.CharField(
        max_length=8,
        choices=ConsultationStatus,
        default=ConsultationStatus.QUEUED,
        db_index=True,
    )
    findings = models.TextField(
        blank=True, help_text="What the review found (overdue, clashing, missing), as sent."
    )
    reasoning = models.TextField(blank=True, help_text="The Compass's reasoning, in its words.")
    reply = models.TextField(blank=True, help_text="The whole reply, as it came back.")
    error = models.TextField(blank=True)
    asked_by = models.CharField(
        max_length=150, blank=True, help_text="User name of who asked (users live in default)."
    )
    model = models.CharField(max_length=100, blank=True, help_text="The model that answered.")
    web_search = models.BooleanField(
        default=False, help_text="Whether the web search tool was offered."
    )
    attempts = models.PositiveSmallIntegerField(default=0)
    created_at = models.DateTimeField(default=timezone.now, db_index=True)
    started_at = models.DateTimeField(
        null=True, blank=True, help_text="When a worker took it: the moment its dues are read at."
    )
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(kind__in=ConsultationKind.values),
                name="compass_consultation_kind_valid",
                violation_error_message="The kind must be one of those offered.",
            ),
            models.CheckConstraint(
                condition=models.Q(status__in=ConsultationStatus.values),
                name="compass_consultation_status_valid",
                violation_error_message="The status must be one of those offered.",
            ),
            models.UniqueConstraint(
                fields=["kind"],
                condition=models.Q(kind="review", status__in=["queued", "running"]),
                name="compass_one_review_under_way",
                violation_error_message="A review is already under way: one runs at a time.",
            ),
        ]

    def __str__(self):
        if self.kind == ConsultationKind.REVIEW:
            return f"Review of working memory, {when(self.created_at)}"
        return Truncator(" ".join(self.question.split())).chars(60)

    @property
    def under_way(self) -> bool:
        return self.status in (ConsultationStatus.QUEUED, ConsultationStatus.RUNNING)


class Proposal(models.Model):
    """A plan a consultation proposed: the suggestion it waits as in the queue, in the order
    the Compass gave it."""

    consultation = models.ForeignKey(
        Consultation, on_delete=models.PROTECT, related_name="proposals"
    )
    suggestion = models.OneToOneField(
        TagSuggestion, on_delete=models.PROTECT, related_name="compass_proposal"
    )
    position = models.PositiveSmallIntegerField()

    class Meta:
        ordering = ["consultation", "position"]
        constraints = [
            models.UniqueConstraint(
                fields=["consultation", "position"],
                name="compass_proposal_position_unique",
                violation_error_message="Two proposals of a consultation cannot share a place.",
            ),
        ]

    def __str__(self):
        return f"Proposal {self.position + 1} of consultation {self.consultation_id}"


class CompassPrompt(VersionedText):
    """One saved version of the Compass's instructions; the newest of a kind is used. Its kinds
    are the consultations' kinds: each kind of consultation has its instructions."""

    kind = models.CharField(max_length=8, choices=ConsultationKind)
    author = models.CharField(
        max_length=150, blank=True, help_text="User name of who saved it (users live in default)."
    )

    class Meta:
        ordering = ["kind", "-created_at", "-id"]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(kind__in=ConsultationKind.values),
                name="compass_prompt_kind_valid",
                violation_error_message="The kind must be one of those offered.",
            ),
        ]

    text_fields = ("kind",)

    def __str__(self):
        return f"{self.get_kind_display()} prompt of {self.created_at:%Y-%m-%d %H:%M}"
