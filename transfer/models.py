"""What an import from another companion wrote, kept beside what it wrote (transfer.bridges).

Each written row has its marker in its own store, written in the same transaction: an
imported message's event (``ImportedMessage``, events store), an imported memory's suggestion
(``ImportedMemory``, summaries store), a proposed draft or wake text (``ImportedProposal``,
default store). A marker names where its row came from (``origin``, unique), so a second
import of the same file adds nothing, and one stopped part-way is finished by the next. It
keeps every field of the source this installation has no place for (``kept``).
"""

from django.conf import settings
from django.db import models
from django.utils import timezone

from events.models import AppendOnlyModel, Event
from mirror.models import TagSuggestion


class BridgeFormat(models.TextChoices):
    SILLYTAVERN = "sillytavern", "SillyTavern (lorebook or chat)"
    CARD = "card", "character card (JSON, PNG or CHARX)"
    LETTA = "letta", "Letta agent file (.af)"
    MEM0 = "mem0", "mem0 memories (JSON)"


class RunStatus(models.TextChoices):
    PREVIEWING = "previewing", "being read for its preview"
    PREVIEWED = "previewed", "previewed, not imported"
    QUEUED = "queued", "waiting for a worker"
    WAITING = "waiting", "waiting for another import to end"
    RUNNING = "running", "under way"
    DONE = "done"
    STOPPED = "stopped", "stopped part-way"
    FAILED = "failed", "failed part-way"


UNDER_WAY = (RunStatus.PREVIEWING, RunStatus.QUEUED, RunStatus.WAITING, RunStatus.RUNNING)


class ImportRun(models.Model):
    """One import of a file: what it found, what it added, whether it finished.

    The Anvil's import is queued and a worker runs it (``transfer.tasks``); the command runs its
    own. ``counts`` is saved after each batch of messages with a beat (``beat_at``), so the page
    can show how far it has come, and a run whose worker went silent is found and marked stopped
    part-way, keeping what it did. A file too large to preview in a page request is read by a
    worker first: its run is previewing, then previewed, until a person imports it."""

    format = models.CharField(max_length=12, choices=BridgeFormat)
    file_name = models.CharField(max_length=255)
    file_sha256 = models.CharField(max_length=64, db_index=True)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True
    )
    started_at = models.DateTimeField(default=timezone.now)
    finished_at = models.DateTimeField(
        null=True, blank=True, help_text="None: under way, or stopped part-way."
    )
    counts = models.JSONField(default=dict, help_text="What it added and what was already here.")
    status = models.CharField(
        max_length=10, choices=RunStatus, default=RunStatus.RUNNING, db_index=True
    )
    beat_at = models.DateTimeField(
        null=True, blank=True, help_text="Its worker's last sign of life: its claim, each batch."
    )
    preview = models.JSONField(
        default=dict,
        blank=True,
        help_text="A preview read by a worker: how far it has come, then the page and speakers.",
    )
    speakers = models.JSONField(
        default=dict, help_text="The identity each speaker of the conversation is said by."
    )
    error = models.TextField(blank=True, help_text="Why it failed, when it did.")

    class Meta:
        ordering = ["-started_at", "-id"]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(format__in=BridgeFormat.values),
                name="transfer_importrun_format_valid",
                violation_error_message="The format must be one of those offered.",
            ),
            models.CheckConstraint(
                condition=models.Q(status__in=RunStatus.values),
                name="transfer_importrun_status_valid",
                violation_error_message="The status must be one of those offered.",
            ),
        ]

    def __str__(self):
        return f"{self.file_name} ({self.get_format_display()})"

    @property
    def under_way(self) -> bool:
        return self.status in UNDER_WAY


class ProposalKind(models.TextChoices):
    DRAFT = "draft", "draft of fragments"
    WAKE = "wake", "wake context"
    PROSE = "prose", "ambient prose"
    GREETING = "greet", "greeting"


class ProposalState(models.TextChoices):
    PENDING = "pending"
    APPLIED = "applied"
    DROPPED = "dropped"


class ImportedProposal(models.Model):
    """Curated knowledge, a wake text or an ambient prose addition an import proposes: nothing
    of it is written until a person applies it in the Anvil (a draft through the Anvil's draft
    apply, a wake text or the ambient prose as a new version)."""

    kind = models.CharField(max_length=5, choices=ProposalKind)
    digest = models.CharField(
        max_length=64, unique=True, help_text="SHA-256 of the kind and text: staged once."
    )
    run = models.ForeignKey(ImportRun, on_delete=models.PROTECT, related_name="proposals")
    title = models.CharField(max_length=200)
    text = models.TextField(
        help_text="The draft in the draft format, or the wake text or ambient prose proposed."
    )
    base = models.TextField(
        blank=True,
        help_text="What it was written against: the fragments it changes as they were (a draft), "
        "or the wake text or ambient prose in use; empty when not known.",
    )
    kept = models.JSONField(default=dict, help_text="The source's fields kept, exactly as read.")
    state = models.CharField(
        max_length=7, choices=ProposalState, default=ProposalState.PENDING, db_index=True
    )
    applied_text = models.TextField(blank=True, help_text="What was applied, when it was edited.")
    decided_at = models.DateTimeField(null=True, blank=True)
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
    )
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(kind__in=ProposalKind.values),
                name="transfer_proposal_kind_valid",
                violation_error_message="The kind must be one of those offered.",
            ),
            models.CheckConstraint(
                condition=models.Q(state__in=ProposalState.values),
                name="transfer_proposal_state_valid",
                violation_error_message="The state must be one of those offered.",
            ),
        ]

    def __str__(self):
        return self.title


class ImportedMessage(AppendOnlyModel):
    """The marker of an imported message's event (events store): where it came from, and what
    of it the event has no place for (the other swipes, the source's own fields)."""

    event = models.OneToOneField(Event, on_delete=models.PROTECT, related_name="imported")
    origin = models.CharField(max_length=200, unique=True)
    run_id = models.PositiveBigIntegerField(
        db_index=True, help_text="Id of the import that wrote it (default store)."
    )
    speaker = models.CharField(max_length=200, help_text="The name the file gave, as written.")
    kept = models.JSONField(default=dict)

    def __str__(self):
        return f"event {self.event_id} ← {self.origin}"


class ImportedMemory(models.Model):
    """The marker of an imported memory's suggestion (summaries store)."""

    suggestion = models.OneToOneField(
        TagSuggestion, on_delete=models.PROTECT, related_name="imported"
    )
    origin = models.CharField(max_length=200, unique=True)
    run_id = models.PositiveBigIntegerField(
        db_index=True, help_text="Id of the import that staged it (default store)."
    )
    kept = models.JSONField(default=dict)

    class Meta:
        verbose_name_plural = "imported memories"

    def __str__(self):
        return f"suggestion {self.suggestion_id} ← {self.origin}"
