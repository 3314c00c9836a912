"""The memory as JSON Lines a person can read without this software, and back.

``portable_export`` writes one file per kind of record (``events.jsonl``, ``working_memory.jsonl``
…), the images the events and the Loom name, and ``manifest.json`` with each file's row count and
SHA-256.
``portable_import`` checks every file, line and field of such a folder before it writes
anything, and then puts it into an empty installation, ids kept. An export of the imported
installation gives the same files, byte for byte. docs/export.md describes every file and field.

What is exported is the apps' own records (the Heart, the Gem, the Mirror, the ledger of calls
to Claude, the Compass and the Loom, and the marks of imports from other companions). The
framework's
rows (accounts, sessions, the task queue, sign-in failures) are not memory, and the search
indexes and change numbers are derived: their triggers make them again as the rows go in.
"""

import hashlib
import heapq
import json
import shutil
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from datetime import UTC, datetime
from itertools import batched
from pathlib import Path, PurePosixPath

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.files import File
from django.core.files.storage import default_storage
from django.db import DatabaseError, models, transaction
from tqdm import tqdm

from compass.models import CompassPrompt, Consultation, Proposal
from events.models import Correction, Event, EventTag, Nudge, Purge, Turn
from gem.archive_store import archive_read, archive_storage, index_read
from gem.models import (
    AmbientProse,
    Forgotten,
    Fragment,
    FragmentEdge,
    FragmentSource,
    Identity,
    IngestRecord,
    MiraEntry,
    State,
    VersionedText,
    WakeText,
    WorkingMemory,
    WorkingMemoryRef,
    WorkingMemorySource,
)
from gem.rows import (
    LATER_FIELDS,
    ROW_FIELDS,
    time_with_offset,
    working_memory_from_row,
    working_memory_row,
)
from gem.services import (
    FragmentEdgeRecorded,
    FragmentRecorded,
    FragmentSourceRecorded,
    edges_import,
    fragments_import,
    sources_import,
    text_version_add,
)
from gem.waking import triggers_problem
from heart.models import ContextSnapshot
from ledger.models import ModelCall
from lens.reindex import event_rows_rewritten
from loom.models import InboxImage, LoomCall, LoomPrompt, Session, SessionImage
from mirror.models import MirrorPrompt, MirrorRun, Summary, TagSuggestion
from silentstar.router import ID_MAX, sequences_reset
from silentstar.words import counted
from transfer.backup import Progress, installation_rows, linked
from transfer.limits import (
    LINE_MAX_CHARS,
    NestedTooDeep,
    json_loaded,
    json_problem,
    lines_bounded,
    text_max,
    text_problem,
)
from transfer.models import ImportedMemory, ImportedMessage, ImportedProposal, ImportRun
from transfer.sharing import LeftOut, left_out_read, row_shared

FORMAT = 1
MANIFEST = "manifest.json"
UNFINISHED = "export-unfinished"  # written first, removed once the manifest is written
BATCH = 1000
ERRORS_SHOWN = 20
TAGS, AUTHOR, FRAGMENTS, SOURCES = "tags", "author", "fragments", "sources"
TAG_MAX = EventTag._meta.get_field("tag").max_length


class PortableError(Exception):
    """An export that cannot be written, or a folder that cannot be imported here: why."""


@dataclass(frozen=True)
class Kind:
    """One file of the export: the rows of one model, each an object of these keys in order."""

    file: str
    model: type[models.Model]
    fields: tuple[str, ...]
    later: tuple[str, ...] = ()  # fields an older export lacks: their default is taken
    derived: tuple[str, ...] = ()  # fields the import makes from the others: never in the file


# In the order they are written on import: a row after the rows it names.
KINDS = (
    Kind("events.jsonl", Event, ("id", "ts", "actor", "content", "image", TAGS)),
    Kind(
        "corrections.jsonl",
        Correction,
        ("id", "event", "sequence", "kind", "text", "actor", "made_by", "made_at"),
    ),
    Kind("purges.jsonl", Purge, ("id", "event", "purged_by", "purged_at", "blanked")),
    Kind(
        "turns.jsonl",
        Turn,
        (
            "id",
            "event",
            "status",
            "reply_event",
            "number",
            "partial_text",
            "error",
            "attempts",
            "model",
            "queued_at",
            "started_at",
            "heartbeat_at",
            "first_token_at",
            "finished_at",
            "input_tokens",
            "output_tokens",
            "cache_read_tokens",
            "cache_write_tokens",
            "again_of",
        ),
        later=("again_of",),
    ),
    Kind(
        "nudges.jsonl",
        Nudge,
        ("id", "reason", "thing", "said", "status", "held", "found_at", "decided_at", "turn"),
    ),
    Kind(
        "snapshots.jsonl",
        ContextSnapshot,
        (
            "id",
            "turn",
            "ts",
            "assembled_system",
            "assembled_user",
            "token_counts",
            "items_included",
            "inputs",
        ),
        later=("inputs",),
    ),
    Kind(
        "fragments.jsonl",
        Fragment,
        ("key", "ambient", "recognition", "inventory", "triggers", "created_at", "updated_at"),
        later=("triggers",),
        derived=("key_folded",),
    ),
    Kind("edges.jsonl", FragmentEdge, ("id", "source", "target", "relation")),
    Kind("fragment_sources.jsonl", FragmentSource, ("id", "fragment", "event_id")),
    Kind("working_memory.jsonl", WorkingMemory, ROW_FIELDS, later=tuple(LATER_FIELDS)),
    Kind(
        "mira_entries.jsonl",
        MiraEntry,
        ("id", "mira_id", "working_memory", "event_id", "entry", "written", "imported_at"),
    ),
    Kind("ambient_prose.jsonl", AmbientProse, ("id", "content", "created_at", AUTHOR)),
    Kind("wake_texts.jsonl", WakeText, ("id", "kind", "content", "created_at", AUTHOR)),
    Kind("identities.jsonl", Identity, ("id", "name", "side", "color")),
    Kind("state.jsonl", State, ("key", "value", "updated_at")),
    Kind("ingest_records.jsonl", IngestRecord, ("event_id", "ingested_at", "changes")),
    Kind(
        "forgotten.jsonl",
        Forgotten,
        ("id", "type", "content", "source", "forgotten_by", "forgotten_at"),
    ),
    Kind(
        "mirror_runs.jsonl",
        MirrorRun,
        (
            "id",
            "started_at",
            "completed_at",
            "kind",
            "route",
            "error",
            "status",
            "first_event_id",
            "last_event_id",
            "usage",
            "progress",
            "heartbeat_at",
            "attempts",
        ),
    ),
    Kind(
        "summaries.jsonl",
        Summary,
        (
            "id",
            "level",
            "first_event_id",
            "last_event_id",
            "content",
            "tokens",
            "created_at",
            "superseded_by",
            "run",
        ),
    ),
    Kind(
        "suggestions.jsonl",
        TagSuggestion,
        (
            "id",
            "summary",
            "type",
            "content",
            "subject",
            "status",
            "promoted_wm_id",
            "created_at",
            "decided_at",
            "proposer",
            "due",
            "hidden",
            "reason",
        ),
        later=("proposer", "due", "hidden", "reason"),
    ),
    Kind("mirror_prompts.jsonl", MirrorPrompt, ("id", "kind", "content", "created_at", "author")),
    Kind(
        "compass_consultations.jsonl",
        Consultation,
        (
            "id",
            "kind",
            "question",
            "status",
            "findings",
            "reasoning",
            "reply",
            "error",
            "asked_by",
            "model",
            "web_search",
            "attempts",
            "created_at",
            "started_at",
            "finished_at",
        ),
    ),
    Kind("compass_proposals.jsonl", Proposal, ("id", "consultation", "suggestion", "position")),
    Kind("compass_prompts.jsonl", CompassPrompt, ("id", "kind", "content", "created_at", "author")),
    Kind(
        "loom_sessions.jsonl",
        Session,
        ("id", "topic", "status", "created_at", "updated_at", "closed_at"),
    ),
    Kind("loom_session_fragments.jsonl", Session.fragments.through, ("id", "session", "fragment")),
    Kind("loom_inbox.jsonl", InboxImage, ("id", "image", "original_name", "uploaded_at")),
    Kind(
        "loom_session_images.jsonl",
        SessionImage,
        ("id", "session", "image", "original_name", "uploaded_at", "taken_at"),
    ),
    Kind(
        "loom_calls.jsonl",
        LoomCall,
        (
            "id",
            "session",
            "agent",
            "fragment_key",
            "question",
            "status",
            "error",
            "notes",
            "draft",
            "sources",
            "draft_state",
            "applied_text",
            "decided_by",
            "decided_at",
            "suggestion_ids",
            "created_at",
            "started_at",
            "finished_at",
            "attempts",
            "draft_base",
        ),
        later=("draft_base",),
    ),
    Kind("loom_call_images.jsonl", LoomCall.images.through, ("id", "loomcall", "sessionimage")),
    Kind("loom_prompts.jsonl", LoomPrompt, ("id", "kind", "content", "created_at", "author")),
    Kind(
        "import_runs.jsonl",
        ImportRun,
        (
            "id",
            "format",
            "file_name",
            "file_sha256",
            "user",
            "started_at",
            "finished_at",
            "counts",
            "status",
            "speakers",
            "error",
            "beat_at",
            "preview",
        ),
        later=("beat_at", "preview"),
    ),
    Kind(
        "import_proposals.jsonl",
        ImportedProposal,
        (
            "id",
            "kind",
            "digest",
            "run",
            "title",
            "text",
            "kept",
            "state",
            "applied_text",
            "decided_at",
            "decided_by",
            "created_at",
            "base",
        ),
        later=("base",),
    ),
    Kind(
        "imported_messages.jsonl",
        ImportedMessage,
        ("id", "event", "origin", "run_id", "speaker", "kept"),
    ),
    Kind(
        "imported_memories.jsonl", ImportedMemory, ("id", "suggestion", "origin", "run_id", "kept")
    ),
    Kind(
        "model_calls.jsonl",
        ModelCall,
        (
            "id",
            "ts",
            "component",
            "model",
            "offline",
            "local",
            "input_tokens",
            "output_tokens",
            "cache_read_tokens",
            "cache_write_5m_tokens",
            "cache_write_1h_tokens",
            "web_searches",
        ),
        later=("web_searches", "local"),
    ),
)
# Files of kinds added after the first exports were written: an export without one imports it
# as empty (an export written before the ledger holds no model_calls.jsonl).
ADDED_LATER = frozenset(
    {
        "model_calls.jsonl",
        "compass_consultations.jsonl",
        "compass_proposals.jsonl",
        "compass_prompts.jsonl",
        "loom_sessions.jsonl",
        "loom_session_fragments.jsonl",
        "loom_inbox.jsonl",
        "loom_session_images.jsonl",
        "loom_calls.jsonl",
        "loom_call_images.jsonl",
        "loom_prompts.jsonl",
        "import_runs.jsonl",
        "import_proposals.jsonl",
        "imported_messages.jsonl",
        "imported_memories.jsonl",
        "corrections.jsonl",
        "purges.jsonl",
        "forgotten.jsonl",
        "nudges.jsonl",
    }
)
# Models whose rows are written inside another file's rows, without ids of their own.
INSIDE = {
    EventTag: ("events.jsonl", TAGS),
    WorkingMemoryRef: ("working_memory.jsonl", FRAGMENTS),
    WorkingMemorySource: ("working_memory.jsonl", SOURCES),
}
KIND_OF_MODEL = {kind.model: kind for kind in KINDS}


def _digest(path: Path) -> str:
    with path.open("rb") as opened:
        return hashlib.file_digest(opened, "sha256").hexdigest()


def _line(row: dict) -> str:
    return json.dumps(row, ensure_ascii=False) + "\n"


# --- Exporting --------------------------------------------------------------------------------


def _model_field(kind: Kind, name: str) -> models.Field:
    return kind.model._meta.get_field(name)


def _by_username(field: models.Field) -> bool:
    """An account named by its user name: accounts are not exported, their ids mean nothing."""
    return field.is_relation and field.related_model is get_user_model()


def _column(field: models.Field) -> str:
    return f"{field.name}__username" if _by_username(field) else field.attname


def _exported(field: models.Field, value):
    if value is None:
        return None
    if isinstance(field, models.DateTimeField):
        return value.isoformat()
    return value


def _kind_rows(kind: Kind) -> Iterator[dict]:
    """The rows of one kind as dicts of its keys, ordered by id (or key)."""
    if kind.model is WorkingMemory:
        # The archive holds items that left the database, in the same row format: they are
        # memory too, and an import writes them back as rows (the next archive run moves them).
        items = WorkingMemory.objects.order_by("pk").prefetch_related("refs", "sources")
        archived = archive_read()
        yield from heapq.merge(
            map(working_memory_row, items.iterator(chunk_size=BATCH)),
            (archived[key] for key in sorted(archived)),
            key=lambda row: row["id"],
        )
        return
    names = [name for name in kind.fields if name != TAGS]
    fields = [_model_field(kind, name) for name in names]
    columns = [_column(field) for field in fields]
    rows = kind.model._base_manager.values_list(*columns)
    if isinstance(kind.model._meta.pk, models.CharField):
        # Sorted here, by code point: the databases' collations order text differently.
        ordered = iter(sorted(rows, key=lambda row: row[0]))
    else:
        ordered = rows.order_by("pk").iterator(chunk_size=BATCH)
    for chunk in batched(ordered, BATCH):
        tags = _tags_of([row[0] for row in chunk]) if TAGS in kind.fields else {}
        for values in chunk:
            row = {
                name: _exported(field, value)
                for name, field, value in zip(names, fields, values, strict=True)
            }
            if TAGS in kind.fields:
                row[TAGS] = tags.get(row["id"], [])
            yield row


def _tags_of(event_ids: list[int]) -> dict[int, list[str]]:
    """Each event's tags, in the order they were logged."""
    tags: dict[int, list[str]] = {}
    found = EventTag.objects.filter(event_id__in=event_ids).order_by("pk")
    for event_id, tag in found.values_list("event_id", "tag"):
        tags.setdefault(event_id, []).append(tag)
    return tags


def _safe_name(name: str) -> bool:
    path = PurePosixPath(name)
    return bool(name) and not path.is_absolute() and ".." not in path.parts


# The models whose rows name image files: the chat's images, the Loom's inbox and sessions.
IMAGE_HOLDERS = (Event, InboxImage, SessionImage)


def _images_copy(folder: Path, *, leaving_out: frozenset[str]) -> tuple[list[dict], list[str]]:
    """Copy every image a row names into the folder, under its own name, but those
    ``leaving_out`` names."""
    names = sorted(
        {
            name
            for model in IMAGE_HOLDERS
            for name in model.objects.exclude(image="").values_list("image", flat=True)
        }
        - leaving_out
    )
    copied, missing = [], []
    for name in tqdm(names, desc="images", unit=" files", disable=None):
        if not _safe_name(name) or not default_storage.exists(name):
            missing.append(name)
            continue
        target = folder / name
        target.parent.mkdir(parents=True, exist_ok=True)
        with default_storage.open(name, "rb") as source, target.open("wb") as copy:
            shutil.copyfileobj(source, copy)
        copied.append({"name": name, "size": target.stat().st_size, "sha256": _digest(target)})
    return copied, missing


def portable_export(*, folder: Path, progress: Progress = print, for_sharing: bool = False) -> dict:
    """Write every record of the memory into ``folder`` (empty or missing): one JSONL file per
    kind, the images the rows name, and ``manifest.json`` last. Returns the manifest. An
    export that fails leaves the folder empty again; one killed leaves its ``UNFINISHED``
    marker, and the next export into the folder removes what it left. ``for_sharing``: what
    was taken back or forgotten is left out (``transfer.sharing``)."""
    if (begun := _unfinished(folder)) is not None:
        _emptied(folder)
        progress(f"{folder} held an export that did not finish (begun {begun}): removed it")
    if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
        raise PortableError(f"{folder} is not an empty folder: export into a new one")
    folder.mkdir(parents=True, exist_ok=True)
    try:
        (folder / UNFINISHED).write_text(datetime.now(UTC).isoformat() + "\n", encoding="utf-8")
        manifest = _export_into(folder, progress, left=left_out_read() if for_sharing else None)
        (folder / UNFINISHED).unlink()
        return manifest
    except DatabaseError as error:
        _emptied(folder)
        raise PortableError(
            f"reading the stores failed ({error}): run manage.py migrate for each store first"
        ) from None
    except BaseException:
        _emptied(folder)
        raise


def _unfinished(folder: Path) -> str | None:
    """When the export in ``folder`` began, if it never finished (its marker is still there)."""
    marker = folder / UNFINISHED
    if not marker.is_file() or linked(folder, UNFINISHED):
        return None
    return marker.read_text(encoding="utf-8", errors="replace").strip()[:40] or "at an unknown time"


def _emptied(folder: Path) -> None:
    for path in folder.iterdir():
        shutil.rmtree(path) if path.is_dir() else path.unlink()


def _export_into(folder: Path, progress: Progress, *, left: LeftOut | None) -> dict:
    exported_at = datetime.now(UTC).isoformat()
    files = []
    total = sum(kind.model._base_manager.count() for kind in KINDS) + len(
        index_read(archive_storage())
    )
    with tqdm(total=total, desc="export", unit=" rows", disable=None) as bar:
        for kind in KINDS:
            count = 0
            with (folder / kind.file).open("w", encoding="utf-8", newline="\n") as written:
                for row in _kind_rows(kind):
                    bar.update()
                    if left is not None and (row := row_shared(kind.file, row, left)) is None:
                        continue
                    written.write(_line(row))
                    count += 1
            path = folder / kind.file
            files.append({"name": kind.file, "rows": count, "sha256": _digest(path)})
            progress(f"{kind.file}: {counted(count, 'row')}")
    images, missing = _images_copy(
        folder, leaving_out=left.images if left is not None else frozenset()
    )
    progress(f"images: {len(images)} files")
    if missing:
        progress(f"images named by events but missing here: {', '.join(missing)}")
    manifest = {
        "format": FORMAT,
        "exported_at": exported_at,
        "for_sharing": left is not None,
        "files": files,
        "images": images,
        "images_missing": missing,
    }
    (folder / MANIFEST).write_text(
        json.dumps(manifest, ensure_ascii=False, indent=2) + "\n", encoding="utf-8"
    )
    return manifest


# --- Importing --------------------------------------------------------------------------------


def manifest_read(folder: Path) -> dict:
    """The manifest of an export, refused unless every file it lists is there, unchanged, and
    every kind of record has its file."""
    if (begun := _unfinished(folder)) is not None:
        raise PortableError(
            f"{folder} holds an export that did not finish (begun {begun}; it was stopped "
            "part-way): export again, and import that (an export into this folder removes "
            "what is left of this one first)"
        )
    path = folder / MANIFEST
    if not path.is_file():
        raise PortableError(f"{path} is missing: {folder} is not an export, or an unfinished one")
    if linked(folder, MANIFEST):
        raise PortableError(f"{path} is a symbolic link: an export holds its own files only")
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
        format_ = manifest["format"]
        listed = {entry["name"]: entry for entry in manifest["files"]}
        entries = [*manifest["files"], *manifest["images"]]
        checks = [(entry["name"], entry["sha256"]) for entry in entries]
        if not isinstance(manifest["images_missing"], list):
            raise TypeError("images_missing is not a list")
    except (ValueError, KeyError, TypeError) as error:
        raise PortableError(f"{path} is damaged: {error!r}") from None
    if not isinstance(format_, int) or format_ > FORMAT:
        raise PortableError(f"{path} has format {format_!r}; this code reads up to {FORMAT}")
    absent = [kind.file for kind in KINDS if kind.file not in listed]
    if missing := [name for name in absent if name not in ADDED_LATER]:
        raise PortableError(f"{path} lists no {', '.join(missing)}: every kind must have its file")
    for name, sha256 in checks:
        if not _safe_name(str(name)) or (folder / name).is_dir():
            raise PortableError(f"{path} names a file outside the export: {name!r}")
        if linked(folder, name):
            raise PortableError(
                f"{name} is, or lies under, a symbolic link: an export holds its own files only"
            )
        if not (folder / name).is_file():
            raise PortableError(f"the export is incomplete: {name} is missing")
        if _digest(folder / name) != sha256:
            raise PortableError(
                f"{name} differs from its SHA-256 in {MANIFEST}: the file was damaged or edited "
                "(after an edit by hand, write its new checksum into the manifest)"
            )
    manifest["files"] += [{"name": name, "rows": 0} for name in absent]
    return manifest


def _lines(folder: Path, kind: Kind) -> Iterator[tuple[int, dict]]:
    """Each line's object with its line number; a line that is not one is an error."""
    if kind.file in ADDED_LATER and not (folder / kind.file).exists():
        return  # an export older than its kind
    with (folder / kind.file).open(encoding="utf-8") as read:
        for number, line in lines_bounded(read):
            if line is None:
                raise PortableError(
                    f"{kind.file} line {number}: longer than {LINE_MAX_CHARS:,} characters"
                )
            try:
                row = json_loaded(line)
            except NestedTooDeep as error:
                raise PortableError(f"{kind.file} line {number}: {error}") from None
            except ValueError as error:
                raise PortableError(f"{kind.file} line {number}: not JSON ({error})") from None
            if not isinstance(row, dict):
                raise PortableError(f"{kind.file} line {number}: not a JSON object")
            yield number, row


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _field_problem(field: models.Field, value) -> str | None:
    """What is wrong with a field's value in a file, or None."""
    if value is None:
        return None if field.null else "must not be null"
    if _by_username(field):
        return None if isinstance(value, str) else "must be a user name (text) or null"
    if field.is_relation:
        return _field_problem(field.target_field, value)
    if isinstance(field, models.BooleanField):
        return None if isinstance(value, bool) else "must be true or false"
    if isinstance(field, models.IntegerField):
        if not _is_int(value):
            return "must be a whole number"
        if field.primary_key and not 1 <= value <= ID_MAX:
            return f"{value} is out of range (ids run from 1 to {ID_MAX:,})"
    elif isinstance(field, models.FloatField):
        if not (_is_int(value) or isinstance(value, float)):
            return "must be a number"
    elif isinstance(field, models.DateTimeField):
        if not isinstance(value, str) or time_with_offset(value) is None:
            return f"{value!r} is not an ISO 8601 time with an offset"
        return None
    elif isinstance(field, models.JSONField):
        return json_problem(value)
    elif not isinstance(value, str):
        return "must be text"
    elif problem := text_problem(value, limit=text_max(field)):
        return problem
    if isinstance(field, models.FileField):
        too_long = len(value) > field.max_length
        return (
            "is not a relative file name"
            if too_long or not (value == "" or _safe_name(value))
            else None
        )
    if field.choices and value not in {choice for choice, _ in field.flatchoices}:
        return (
            f"{value!r} is not one of {', '.join(str(choice) for choice, _ in field.flatchoices)}"
        )
    try:
        field.run_validators(value)
    except ValidationError as error:
        return " ".join(error.messages)
    return None


def _list_problem(name: str, value) -> str | None:
    """What is wrong with a list inside a row (an event's tags, an item's fragments or
    source events), or None."""
    if not isinstance(value, list):
        return "must be a list"
    if name == SOURCES:
        if not all(_is_int(each) and each >= 0 for each in value):
            return "must list event ids (whole numbers)"
    elif not all(isinstance(each, str) and each for each in value):
        return "must list words (text)"
    elif name == TAGS and (
        problem := next(filter(None, (text_problem(each, limit=TAG_MAX) for each in value)), None)
    ):
        return f"holds a tag that {problem}"
    if len(set(value)) != len(value):
        return "names one thing twice"
    return None


# The lists written inside a row, in place of rows of their own: an event's tags, a
# working-memory item's fragments and source events.
LISTED = {Event: (TAGS,), WorkingMemory: (FRAGMENTS, SOURCES)}


def _listed(kind: Kind, name: str) -> bool:
    return name in LISTED.get(kind.model, ())


# Fields whose values the Gem checks as it checks its own writes of them: a fragment's triggers.
VALUE_CHECKS = {(Fragment, "triggers"): triggers_problem}


def _value_problem(kind: Kind, name: str, value) -> str | None:
    check = VALUE_CHECKS.get((kind.model, name))
    return check(value) if check is not None else None


def _row_problems(kind: Kind, row: dict) -> Iterator[tuple[str, str]]:
    for name in kind.fields:
        if name not in row:
            if name not in kind.later:
                yield name, "is missing"
        elif _listed(kind, name):
            if problem := _list_problem(name, row[name]):
                yield name, problem
        elif problem := _field_problem(_model_field(kind, name), row[name]) or _value_problem(
            kind, name, row[name]
        ):
            yield name, problem
    for name in row:
        if name not in kind.fields:
            yield name, "is not a field of this file (docs/export.md lists them)"


def _unique_sets(model: type[models.Model]) -> list[tuple[str, ...]]:
    """The fields whose values no two rows share, one tuple per rule."""
    sets = [(field.name,) for field in model._meta.concrete_fields if field.unique]
    sets += [
        tuple(constraint.fields)
        for constraint in model._meta.constraints
        if isinstance(constraint, models.UniqueConstraint)
        and constraint.condition is None
        and constraint.fields
    ]
    return sets


@dataclass
class _Checked:
    """What the check of a folder found: the problems, and what the rows name."""

    problems: list[str]
    keys: dict[type[models.Model], set]
    usernames: set[str]


def _check(folder: Path, manifest: dict) -> _Checked:
    """Read every line of every file and check each field, then each reference between rows;
    nothing is written."""
    checked = _Checked(problems=[], keys={kind.model: set() for kind in KINDS}, usernames=set())
    references: list[tuple[str, type[models.Model], object]] = []
    images = {entry["name"] for entry in manifest["images"]} | set(manifest["images_missing"])
    rows_listed = {entry["name"]: entry["rows"] for entry in manifest["files"]}

    def problem(text: str) -> None:
        checked.problems.append(text)

    for kind in KINDS:
        pk = kind.model._meta.pk.name
        seen: dict[tuple[str, ...], set] = {
            names: set() for names in _unique_sets(kind.model) if not set(names) & set(kind.derived)
        }
        lines = 0
        for number, row in _lines(folder, kind):
            lines = number
            at = f"{kind.file} line {number}"
            found = [f"{at}, field “{name}”: {text}" for name, text in _row_problems(kind, row)]
            checked.problems.extend(found)
            if found:
                continue
            checked.keys[kind.model].add(row[pk])
            for names, values in seen.items():
                value = tuple(row[name] for name in names)
                if None in value:
                    continue  # a unique column holds any number of NULLs (a turn not answered)
                if value in values:
                    problem(f"{at}: another row has the same {', '.join(names)} {value!r}")
                values.add(value)
            for name in kind.fields:
                field = None if _listed(kind, name) else _model_field(kind, name)
                if field is not None and _by_username(field) and row[name] is not None:
                    checked.usernames.add(row[name])
                elif field is not None and field.is_relation and row[name] is not None:
                    references.append((f"{at}, field “{name}”", field.related_model, row[name]))
            if kind.model in IMAGE_HOLDERS and row["image"] and row["image"] not in images:
                problem(f"{at}, field “image”: {row['image']} is not among the export's images")
            if kind.model is WorkingMemory:
                twin = row["near_duplicate_of"]
                if twin is not None and not twin < row["id"]:
                    problem(f"{at}, field “near_duplicate_of”: names a later item ({twin})")
                for key in row[FRAGMENTS]:
                    references.append((f"{at}, field “{FRAGMENTS}”", Fragment, key))
        if lines != rows_listed[kind.file]:
            problem(f"{kind.file} has {lines} rows and {MANIFEST} says {rows_listed[kind.file]}")
    for where, model, value in references:
        if value not in checked.keys[model]:
            problem(f"{where}: {value!r} is not in {KIND_OF_MODEL[model].file}")
    return checked


def _authors(usernames: set[str], *, unknown_blank: bool) -> dict[str, int]:
    """The ids of the accounts here that the rows name as authors, by user name."""
    here = dict(
        get_user_model()
        ._default_manager.filter(username__in=usernames)
        .values_list("username", "pk")
    )
    unknown = sorted(usernames - here.keys())
    if unknown and not unknown_blank:
        raise PortableError(
            f"the export names authors with no account here ({', '.join(unknown)}): create "
            "their accounts (manage.py createsuperuser), or import with --unknown-authors-blank "
            "to save their versions without an author"
        )
    return here


def _imported(field: models.Field, value, authors: dict[str, int]):
    if value is None:
        return None
    if _by_username(field):
        return authors.get(value)
    if isinstance(field, models.DateTimeField):
        return datetime.fromisoformat(value)
    return value


def _write(folder: Path, kind: Kind, authors: dict[str, int], bar: tqdm) -> None:
    if kind.model is WorkingMemory:
        for _, row in _lines(folder, kind):
            working_memory_from_row(row)  # the one way working memory is written
            bar.update()
        return
    fields = [_model_field(kind, name) for name in kind.fields if name != TAGS]
    # auto_now would stamp these with the time of the import: they are set again afterwards.
    stamped = [field for field in fields if getattr(field, "auto_now", False)]
    manager = kind.model._default_manager
    for chunk in batched((row for _, row in _lines(folder, kind)), BATCH):
        values = [
            {
                field.attname: _imported(field, row[field.name], authors)
                if field.name in row
                else field.get_default()
                for field in fields
            }
            for row in chunk
        ]
        if _gem_write(kind.model, values):
            bar.update(len(chunk))
            continue
        manager.bulk_create([kind.model(**each) for each in values])
        if TAGS in kind.fields:
            EventTag.objects.bulk_create(
                [EventTag(event_id=row["id"], tag=tag) for row in chunk for tag in row[TAGS]]
            )
        if kind.model is Correction:
            # The events went in first, indexed as written: what the corrections change is
            # indexed again.
            for event_id in sorted({each["event_id"] for each in values}):
                event_rows_rewritten(event_id)
        for each in values:
            if stamped:
                manager.filter(pk=each[kind.model._meta.pk.attname]).update(
                    **{field.attname: each[field.attname] for field in stamped}
                )
        bar.update(len(chunk))


# The Gem's writes of what was recorded elsewhere, for its kinds: a row's values, by the model's
# field names (``attname``), are the record's.
GEM_IMPORTS = {
    Fragment: (FragmentRecorded, fragments_import),
    FragmentEdge: (FragmentEdgeRecorded, edges_import),
    FragmentSource: (FragmentSourceRecorded, sources_import),
}


def _gem_write(model: type[models.Model], values: list[dict]) -> bool:
    """Write rows of a kind the Gem writes through the Gem (fragments, edges, sources, and the
    versions of the ambient prose, the wake texts and the agents' prompts), their ids and times
    kept; False, writing nothing, for any other kind."""
    if model in GEM_IMPORTS:
        recorded, write = GEM_IMPORTS[model]
        write(rows=[recorded(**each) for each in values])
    elif issubclass(model, VersionedText):
        author = model._meta.get_field("author").attname
        for each in values:
            text_version_add(
                model=model,
                content=each["content"],
                author=each[author],
                at=each["created_at"],
                pk=each["id"],
                **{name: each[name] for name in model.text_fields},
            )
    else:
        return False
    return True


def _set_up_replaced() -> dict[str, int]:
    """Remove what an empty installation holds of the exported kinds (its default identities,
    wake texts and Mirror prompts), which the export's rows replace."""
    replaced = {}
    for kind in reversed(KINDS):
        if kind.model is Event:
            continue  # the event log refuses deletes, and an empty installation has none
        _, deleted = kind.model._base_manager.all().delete()
        if count := deleted.get(kind.model._meta.label, 0):
            replaced[kind.file] = count
    return replaced


def _images_restore(folder: Path, entries: list[dict], saved: list[str]) -> None:
    for entry in tqdm(entries, desc="images", unit=" files", disable=None):
        name = entry["name"]
        if default_storage.exists(name):
            default_storage.delete(name)  # no event here names it: the installation is empty
        with (folder / name).open("rb") as source:
            stored = default_storage.save(name, File(source))
        saved.append(stored)
        if stored != name:
            raise PortableError(f"{name} was stored as {stored}")


@dataclass(frozen=True)
class Imported:
    rows: dict[str, int]  # rows per file
    replaced: dict[str, int]  # rows of the installation's set-up that the export's replaced
    images: int


def portable_import(
    *, folder: Path, unknown_authors_blank: bool = False, progress: Progress = print
) -> Imported:
    """Import an export into this installation, which must be empty: no events, working memory,
    fragments or summaries (a new one with its owner account counts as empty). Every file, line
    and field is checked before anything is written; the rows are then written in one
    transaction per store, with their ids, and the images saved."""
    manifest = manifest_read(folder)
    present = {key: count for key, count in installation_rows().items() if count}
    if archived := len(index_read(archive_storage())):
        present["archived working memory"] = archived
    if present:
        shown = ", ".join(f"{key.replace('_', ' ')}: {count}" for key, count in present.items())
        raise PortableError(
            f"this installation is not empty ({shown}): an export is imported only into an "
            "empty one"
        )
    checked = _check(folder, manifest)
    if checked.problems:
        shown = "\n".join(checked.problems[:ERRORS_SHOWN])
        more = len(checked.problems) - ERRORS_SHOWN
        raise PortableError(
            f"nothing was imported: {counted(len(checked.problems), 'problem')}\n{shown}"
            + (f"\n… and {more} more" if more > 0 else "")
        )
    authors = _authors(checked.usernames, unknown_blank=unknown_authors_blank)
    rows = {entry["name"]: entry["rows"] for entry in manifest["files"]}
    saved: list[str] = []
    try:
        _images_restore(folder, manifest["images"], saved)
        with ExitStack() as stores:
            for alias in settings.STORE_ALIASES:
                stores.enter_context(transaction.atomic(using=alias))
            replaced = _set_up_replaced()
            with tqdm(total=sum(rows.values()), desc="import", unit=" rows", disable=None) as bar:
                for kind in KINDS:
                    _write(folder, kind, authors, bar)
                    progress(f"{kind.file}: {counted(rows[kind.file], 'row')}")
            sequences_reset([*KIND_OF_MODEL, *INSIDE])
    except (DatabaseError, PortableError) as error:
        for name in saved:
            default_storage.delete(name)
        raise PortableError(f"the import was undone, nothing was written: {error}") from None
    progress(f"images: {len(saved)} files")
    return Imported(rows=rows, replaced=replaced, images=len(saved))
