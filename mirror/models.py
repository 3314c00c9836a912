"""The Mirror's output (``summaries`` store): summaries, staged tag suggestions, runs.

Event and working-memory references are plain integer ids: they live in other stores.
"""

from django.db import models
from django.utils import timezone

from gem.models import VersionedText, WorkingMemoryType


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
    run = models.ForeignKey(
        "MirrorRun", on_delete=models.PROTECT, null=True, blank=True, related_name="summaries"
    )

    class Meta:
        verbose_name_plural = "summaries"
        ordering = ["first_event_id", "level", "id"]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(level__in=SummaryLevel.values),
                name="mirror_summary_level_valid",
                violation_error_message="The level must be one of those offered.",
            ),
            models.CheckConstraint(
                condition=models.Q(first_event_id__lte=models.F("last_event_id")),
                name="mirror_summary_range_ordered",
                violation_error_message="A summary’s first event cannot come after its last.",
            ),
        ]

    def __str__(self):
        return f"{self.level} events {self.first_event_id}–{self.last_event_id}"


class SuggestionStatus(models.TextChoices):
    PENDING = "pending"
    PROMOTED = "promoted"
    REJECTED = "rejected"


class Proposer(models.TextChoices):
    """Who staged a suggestion: each agent proposes what the tag language lets it create."""

    MIRROR = "mirror", "the Mirror"
    COMPASS = "compass", "the Compass"
    LOOM = "loom", "the Loom"
    IMPORT = "import", "an import"


class TagSuggestion(models.Model):
    """A working-memory item an agent proposes (the Mirror from a summary, the Compass a plan,
    the Loom's Weaver a pattern); a person promotes or rejects it."""

    summary = models.ForeignKey(
        Summary,
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="suggestions",
        help_text="The summary the Mirror read it in (the Mirror's suggestions only).",
    )
    proposer = models.CharField(
        max_length=8, choices=Proposer, default=Proposer.MIRROR, db_index=True
    )
    type = models.CharField(max_length=8, choices=WorkingMemoryType)
    content = models.TextField()
    subject = models.CharField(max_length=200, blank=True)
    due = models.DateTimeField(
        null=True, blank=True, help_text="When a plan is due (none: read from its words)."
    )
    hidden = models.BooleanField(
        default=False,
        help_text="A hidden plan: promoted, it stays out of Lingering until 48 hours before due.",
    )
    reason = models.TextField(blank=True, help_text="Why the agent proposes it, in its words.")
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
                violation_error_message="The type must be one of those offered.",
            ),
            models.CheckConstraint(
                condition=models.Q(status__in=SuggestionStatus.values),
                name="mirror_suggestion_status_valid",
                violation_error_message="The status must be one of those offered.",
            ),
            models.CheckConstraint(
                condition=models.Q(proposer__in=Proposer.values),
                name="mirror_suggestion_proposer_valid",
                violation_error_message="The proposer must be one of those offered.",
            ),
            models.CheckConstraint(
                condition=~models.Q(proposer=Proposer.MIRROR) | models.Q(summary__isnull=False),
                name="mirror_suggestion_mirror_has_summary",
                violation_error_message="A Mirror suggestion comes from a summary.",
            ),
            models.CheckConstraint(
                condition=models.Q(hidden=False) | models.Q(type="plan", due__isnull=False),
                name="mirror_suggestion_hidden_plan_due",
                violation_error_message="Only a plan with a due date can be hidden.",
            ),
        ]

    def __str__(self):
        return f"{self.type}: {self.content[:60]} ({self.status})"


class MirrorRunStatus(models.TextChoices):
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"
    ROLLED_BACK = "rolled_back", "rolled back"


class MirrorRun(models.Model):
    """One run of the Mirror; a row without ``completed_at`` is a run under way or one that crashed.

    ``progress`` holds the outputs of the passes already made for the chunk in hand, so a run
    taken over after its worker died goes on from the next pass; a chunk's summary and
    suggestions are written in one transaction together with clearing it, so nothing is ever
    half-applied. ``usage`` counts calls and tokens per pass role. At most one run is running.
    """

    started_at = models.DateTimeField(default=timezone.now)
    completed_at = models.DateTimeField(null=True, blank=True)
    kind = models.CharField(max_length=20, help_text="scheduled, manual or rebuild")
    route = models.CharField(max_length=20, blank=True, help_text="two-pass or three-pass")
    error = models.TextField(blank=True)
    status = models.CharField(
        max_length=12, choices=MirrorRunStatus, default=MirrorRunStatus.RUNNING, db_index=True
    )
    first_event_id = models.PositiveBigIntegerField(null=True, blank=True)
    last_event_id = models.PositiveBigIntegerField(null=True, blank=True)
    usage = models.JSONField(default=dict, blank=True, help_text="Calls and tokens per pass role.")
    progress = models.JSONField(
        default=dict, blank=True, help_text="Pass outputs of the chunk in hand, for a resume."
    )
    heartbeat_at = models.DateTimeField(default=timezone.now)
    attempts = models.PositiveSmallIntegerField(default=1)

    class Meta:
        ordering = ["-started_at", "-id"]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(status__in=MirrorRunStatus.values),
                name="mirror_run_status_valid",
                violation_error_message="The status must be one of those offered.",
            ),
            models.UniqueConstraint(
                fields=["status"],
                condition=models.Q(status="running"),
                name="mirror_one_running_run",
                violation_error_message="Another Mirror run is running: one runs at a time.",
            ),
        ]

    def __str__(self):
        state = "done" if self.completed_at else "unfinished"
        return f"{self.kind} run {self.started_at:%Y-%m-%d %H:%M} ({state})"


class MirrorPromptKind(models.TextChoices):
    CLEAN = "clean", "clean (fastest model)"
    COMPRESS = "compress", "compress do/narrate (middle model)"
    SUMMARISE = "summarise", "summarise and tag (strongest model)"
    MERGE = "merge", "merge three summaries (strongest model)"


class MirrorPrompt(VersionedText):
    """One saved version of the instructions for a Mirror pass; the newest of a kind is used."""

    kind = models.CharField(max_length=10, choices=MirrorPromptKind)
    author = models.CharField(
        max_length=150, blank=True, help_text="User name of who saved it (users live in default)."
    )

    class Meta:
        ordering = ["kind", "-created_at", "-id"]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(kind__in=MirrorPromptKind.values),
                name="mirror_prompt_kind_valid",
                violation_error_message="The kind must be one of those offered.",
            ),
        ]

    text_fields = ("kind",)

    def __str__(self):
        return f"{self.get_kind_display()} of {self.created_at:%Y-%m-%d %H:%M}"
