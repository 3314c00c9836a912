"""The Gem: curated knowledge (fragments and their graph), working memory, identities, state.

Cross-store references (``event_id``) are plain integers: events live in another database.
"""

from typing import ClassVar

from django.conf import settings
from django.core.validators import RegexValidator
from django.db import models
from django.utils import timezone

from silentstar.when import when

KEY_VALIDATOR = RegexValidator(
    r"^[\w][\w'-]*$",
    "A key is one word: letters, digits, hyphens, underscores or apostrophes, no spaces.",
)
COLOR_VALIDATOR = RegexValidator(r"^#[0-9a-fA-F]{6}$", "A colour is written #rrggbb.")


class WorkingMemoryType(models.TextChoices):
    FEELING = "feeling"
    THOUGHT = "thought"
    PATTERN = "pattern"
    DESC = "desc"
    PLAN = "plan"
    PIN = "pin"
    SECRET = "secret"


class WorkingMemoryStatus(models.TextChoices):
    ACTIVE = "active"
    RESOLVED = "resolved"
    DROPPED = "dropped"
    DECAYED = "decayed"
    SUPERSEDED = "superseded"


class WorkingMemory(models.Model):
    """Short-lived, decaying knowledge: what is lingering."""

    event_id = models.PositiveBigIntegerField(
        null=True, blank=True, db_index=True, help_text="Id of the source event (events store)."
    )
    type = models.CharField(max_length=8, choices=WorkingMemoryType)
    content = models.TextField()
    subject = models.CharField(max_length=200, blank=True, db_index=True)
    actor = models.CharField(max_length=64, blank=True)
    status = models.CharField(
        max_length=10,
        choices=WorkingMemoryStatus,
        default=WorkingMemoryStatus.ACTIVE,
        db_index=True,
    )
    due = models.DateTimeField(null=True, blank=True)
    turn = models.PositiveIntegerField(null=True, blank=True, help_text="Turn counter at creation.")
    created_at = models.DateTimeField(default=timezone.now)
    refreshed_at = models.DateTimeField(
        default=timezone.now, help_text="Decay anchor; a retag resets it."
    )
    resolved_at = models.DateTimeField(null=True, blank=True)
    suggestion_id = models.PositiveBigIntegerField(
        null=True,
        blank=True,
        db_index=True,
        help_text="Id of the Mirror suggestion it was promoted from (summaries store).",
    )
    # Only a plan with a due date is hidden (``gem.services.working_memory_create`` sees to it;
    # a check constraint would make SQLite copy the table, dropping the triggers on it).
    hidden = models.BooleanField(
        default=False,
        help_text="A hidden plan: left out of Lingering until its resurfacing window opens, "
        "48 hours before it is due.",
    )
    # Mira's two numbers (seed 003): read by the Lens query's importance and emotion filters.
    importance = models.FloatField(
        default=0.5, help_text="How much this matters, 0 to 1 (Mira's base is 0.5)."
    )
    valence = models.FloatField(
        default=0.0, help_text="Emotional valence, -1 (negative) to +1 (positive); 0 is neutral."
    )
    importance_edited = models.BooleanField(
        default=False,
        help_text="A person set importance and valence in the Anvil: scoring leaves them alone.",
    )
    # Seed 003's deduplication: the hash of the content's meaning words (gem.meaning).
    semantic_hash = models.CharField(max_length=16, blank=True, db_index=True, editable=False)
    near_duplicate_of = models.ForeignKey(
        "self",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="near_duplicates",
        help_text="An active item this one nearly repeats, for a person to review.",
    )
    fragments = models.ManyToManyField(
        "Fragment", through="WorkingMemoryRef", related_name="working_memory", blank=True
    )

    class Meta:
        verbose_name = "working memory item"
        verbose_name_plural = "working memory"
        ordering = ["-refreshed_at", "-id"]
        indexes = [models.Index(fields=["status", "type"], name="gem_wm_status_type")]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(type__in=WorkingMemoryType.values),
                name="gem_workingmemory_type_valid",
                violation_error_message="The type must be one of those offered.",
            ),
            models.CheckConstraint(
                condition=models.Q(status__in=WorkingMemoryStatus.values),
                name="gem_workingmemory_status_valid",
                violation_error_message="The status must be one of those offered.",
            ),
            models.CheckConstraint(
                condition=models.Q(importance__gte=0, importance__lte=1),
                name="gem_workingmemory_importance_0_to_1",
                violation_error_message="Importance is a number from 0 to 1.",
            ),
            models.CheckConstraint(
                condition=models.Q(valence__gte=-1, valence__lte=1),
                name="gem_workingmemory_valence_minus_1_to_1",
                violation_error_message="Valence is a number from -1 to 1.",
            ),
        ]

    def __str__(self):
        return f"{self.type}: {self.content[:60]}"


class Fragment(models.Model):
    """Crystallised knowledge in three tiers; the key is the exact lookup word."""

    key = models.CharField(max_length=100, primary_key=True, validators=[KEY_VALIDATOR])
    # Written with the key by the Gem's writes of fragments (``gem.keys``); a folded letter can
    # be up to three. NULL while a rename moves the fragment to its new row (``key_move``), and
    # in a row written around the Gem's writes: a unique column holds any number of NULLs.
    key_folded = models.CharField(  # noqa: DJ001
        max_length=300,
        null=True,
        editable=False,
        help_text="The key case folded: no two keys differ only in case.",
    )
    ambient = models.TextField(
        blank=True, help_text="Always known: register-level, one or two lines."
    )
    recognition = models.TextField(blank=True, help_text="Story-level detail (shallow recall).")
    inventory = models.TextField(blank=True, help_text="Full detail (deep recall).")
    triggers = models.JSONField(
        default=list,
        blank=True,
        help_text="Words or phrases that wake the fragment when the person says them, besides "
        "its key.",
    )
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["key"]
        constraints = [
            models.UniqueConstraint(
                fields=["key_folded"],
                name="gem_fragment_unique_key_folded",
                violation_error_message="A fragment of that key but for case is already here.",
            ),
        ]
        # The one permission that opens the whole memory (gem/access.py); it sits on the
        # fragments because they are the Gem's core, not because it concerns them alone.
        permissions = [("use_memory", "Can read and write the memory")]

    def __str__(self):
        return self.key


class WorkingMemoryRef(models.Model):
    """A working-memory item that names a fragment key."""

    wm = models.ForeignKey(WorkingMemory, on_delete=models.CASCADE, related_name="refs")
    fragment = models.ForeignKey(Fragment, on_delete=models.CASCADE, related_name="wm_refs")

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["wm", "fragment"],
                name="gem_wmref_unique_wm_fragment",
                violation_error_message="This item already names that fragment.",
            ),
        ]

    def __str__(self):
        return f"wm {self.wm_id} → {self.fragment_id}"


class FragmentEdge(models.Model):
    """An authored connection between two fragments."""

    source = models.ForeignKey(Fragment, on_delete=models.CASCADE, related_name="edges_out")
    target = models.ForeignKey(Fragment, on_delete=models.CASCADE, related_name="edges_in")
    relation = models.CharField(max_length=100, blank=True)

    class Meta:
        ordering = ["source", "target"]
        constraints = [
            models.UniqueConstraint(
                fields=["source", "target"],
                name="gem_edge_unique_source_target",
                violation_error_message="These two fragments are already linked.",
            ),
            models.CheckConstraint(
                condition=~models.Q(source=models.F("target")),
                name="gem_edge_not_a_loop",
                violation_error_message="A fragment cannot link to itself.",
            ),
        ]

    def __str__(self):
        return f"{self.source_id} —{self.relation or ''}→ {self.target_id}"


TIERS = ("ambient", "recognition", "inventory")  # a fragment's tiers, shallowest first
RELATION_MAX_LENGTH = FragmentEdge._meta.get_field("relation").max_length


class FragmentSource(models.Model):
    """An event a fragment was compiled from (traceability)."""

    fragment = models.ForeignKey(Fragment, on_delete=models.CASCADE, related_name="sources")
    event_id = models.PositiveBigIntegerField(help_text="Id of the event (events store).")

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["fragment", "event_id"],
                name="gem_source_unique_fragment_event",
                violation_error_message="This event is already a source of the fragment.",
            ),
        ]

    def __str__(self):
        return f"{self.fragment_id} ← event {self.event_id}"


class WorkingMemorySource(models.Model):
    """An event a working-memory item came from (traceability): for an item promoted from a
    Mirror suggestion, each event of its summary's range that carries its words."""

    wm = models.ForeignKey(WorkingMemory, on_delete=models.CASCADE, related_name="sources")
    event_id = models.PositiveBigIntegerField(help_text="Id of the event (events store).")

    class Meta:
        ordering = ["wm", "event_id"]
        constraints = [
            models.UniqueConstraint(
                fields=["wm", "event_id"],
                name="gem_wmsource_unique_wm_event",
                violation_error_message="This event is already a source of the item.",
            ),
        ]

    def __str__(self):
        return f"wm {self.wm_id} ← event {self.event_id}"


class VersionedText(models.Model):
    """A text kept as versions: every save adds a row, none is changed, and the newest of a
    text is the one in use (``gem.selectors.newest_version``); a version is written by
    ``gem.services.text_version_add`` and nothing else. The ambient prose is one text; a wake
    text or an agent's prompt is one text per ``kind`` (its ``text_fields``).

    ``author`` is each model's own: an account in the default store, a user name in the
    summaries store (accounts live in the default store)."""

    content = models.TextField()
    created_at = models.DateTimeField(default=timezone.now, db_index=True)

    # The fields that say which text a version is of: versions with the same values are one text.
    text_fields: ClassVar[tuple[str, ...]] = ()

    class Meta:
        abstract = True


class AmbientProse(VersionedText):
    """One saved version of the authored ambient prose; the newest is in use."""

    content = models.TextField(blank=True)
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True
    )

    class Meta:
        verbose_name = "ambient prose version"
        ordering = ["-created_at", "-id"]

    def __str__(self):
        return f"ambient prose of {when(self.created_at)}"


class WakeTextKind(models.TextChoices):
    WAKE = "wake", "wake context"
    IMAGE = "image", "image context"
    GREETING = "greeting", "greeting"


class WakeText(VersionedText):
    """One saved version of a wake text (the wake context, the image context, or the greeting
    the companion opens a new installation's chat with)."""

    kind = models.CharField(max_length=8, choices=WakeTextKind)
    content = models.TextField(blank=True)
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True
    )

    class Meta:
        ordering = ["kind", "-created_at", "-id"]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(kind__in=WakeTextKind.values),
                name="gem_waketext_kind_valid",
                violation_error_message="The kind must be one of those offered.",
            ),
        ]

    text_fields = ("kind",)

    def __str__(self):
        return f"{self.get_kind_display()} of {when(self.created_at)}"


class IdentitySide(models.TextChoices):
    USER = "user"
    COMPANION = "companion"


class Identity(models.Model):
    """Who speaks: one of the person's identities or one of the companion's."""

    name = models.CharField(max_length=40, unique=True, validators=[KEY_VALIDATOR])
    side = models.CharField(max_length=9, choices=IdentitySide)
    color = models.CharField(max_length=7, validators=[COLOR_VALIDATOR])

    class Meta:
        verbose_name_plural = "identities"
        ordering = ["side", "id"]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(side__in=IdentitySide.values),
                name="gem_identity_side_valid",
                violation_error_message="An identity is on the person’s side or the companion’s.",
            ),
        ]

    def __str__(self):
        return self.name


class State(models.Model):
    """Small named values the system keeps between turns (turn counter, pending recall)."""

    key = models.CharField(max_length=100, primary_key=True)
    value = models.TextField()
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["key"]

    def __str__(self):
        return self.key


class Forgotten(models.Model):
    """Words a person asked to forget, a working-memory item's or a suggestion's: nothing
    stages them again (``mirror.services.suggestions_stage`` leaves out whatever nearly repeats
    them), whoever proposes it."""

    type = models.CharField(max_length=8)
    content = models.TextField()
    source = models.CharField(
        max_length=40, help_text="What was forgotten: “working memory #12”, “suggestion #3”."
    )
    forgotten_by = models.CharField(max_length=150, help_text="Who forgot it: a username.")
    forgotten_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["id"]
        verbose_name_plural = "forgotten"

    def __str__(self):
        return f"{self.source} ({self.type}), forgotten by {self.forgotten_by}"


class IngestRecord(models.Model):
    """What ingesting one event did to working memory; its presence makes ingest run once."""

    event_id = models.PositiveBigIntegerField(primary_key=True, help_text="Id of the event.")
    ingested_at = models.DateTimeField(default=timezone.now)
    changes = models.JSONField(default=dict)

    class Meta:
        ordering = ["-event_id"]

    def __str__(self):
        return f"ingest of event {self.event_id}"


class MiraEntry(models.Model):
    """An entry of Mira's JSONL memory (seed 003) that was imported, and what it became here.

    ``entry`` is the line exactly as it was read, so that an export gives back every field this
    model has no place for; ``written`` holds what the import made of it, so that the export
    can tell which values changed here since. Ids are Mira's strings ("mem_045").
    """

    mira_id = models.CharField(max_length=200, unique=True)
    working_memory = models.ForeignKey(
        WorkingMemory,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="mira_entries",
        help_text="The item it was written as, or the active item it refreshed.",
    )
    event_id = models.PositiveBigIntegerField(
        null=True, blank=True, db_index=True, help_text="Id of the event it became (events store)."
    )
    entry = models.JSONField(help_text="The entry exactly as it was imported.")
    written = models.JSONField(
        default=dict,
        blank=True,
        help_text="The item's values as the import wrote them; empty when it refreshed an item.",
    )
    imported_at = models.DateTimeField(default=timezone.now)

    class Meta:
        verbose_name = "Mira entry"
        verbose_name_plural = "Mira entries"
        ordering = ["pk"]

    def __str__(self):
        return self.mira_id
