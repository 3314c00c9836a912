"""Another companion's memory brought in: a plan of everything an import would do, then the
import itself (``manage.py import_from``, the Anvil's import page; docs/bridges.md).

Curated knowledge is never written here: a lorebook's entries (a card's book, Letta's blocks)
become a draft in the draft format, a card's description or Letta's persona a proposed
addition to the wake text, and the entries that were always in the other app's context a
proposed addition to the ambient prose naming their ``[keys]``, each staged as
``ImportedProposal`` for a person to apply, edit or drop in the Anvil. Memories become
suggestions of the queue, typed by what they say. Messages become events, with their original
times, said by the identities their speakers are mapped to.

``bridge_plan`` reads the stores and writes nothing: it is the preview, and every refusal comes
from it or from the reader, before anything is written. ``bridge_import`` writes what the plan
says, each part with its marker in the same transaction, so a second import adds nothing and
one stopped part-way is finished by the next.

The Anvil's imports are runs a worker takes one at a time (``import_queued_run``): a run that
finds another holding the installation waits, holding no worker, until the one before it ends.
Each run beats as it writes; ``imports_recover`` marks one silent for too long stopped
part-way, and the next import of the same file finishes it. A file too large to preview in a
page request is read and planned by a worker too (``preview_queued_run``).
"""

import hashlib
import json
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field, replace
from datetime import datetime, timedelta
from functools import cached_property

from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.db import connections, router, transaction
from django.db.models import Q
from django.utils import timezone
from django_q.tasks import async_task

from events.models import Event, EventTag
from events.parse import parse
from events.selectors import source_events
from gem.draft import (
    Draft,
    DraftDiff,
    DraftEdge,
    DraftFragment,
    draft_diff,
    draft_parse,
    draft_render,
    draft_written,
    edges_ordered,
    fragments_now,
)
from gem.models import (
    TIERS,
    AmbientProse,
    Fragment,
    FragmentEdge,
    IdentitySide,
    VersionedText,
    WakeText,
    WakeTextKind,
)
from gem.selectors import (
    AMBIENT_KEY,
    ambient_prose_current,
    identities_current,
    wake_text_current,
)
from gem.zone import owner_time_zone
from mirror.estimate import CompressionEstimate, compression_estimate, turn_transcripts
from mirror.models import Proposer, TagSuggestion
from mirror.services import Staged, suggestions_stage
from silentstar.uploads import megabytes
from silentstar.words import counted
from transfer.bundle import BridgeError, Bundle, LoreEntry, Message
from transfer.facts import fact_typed
from transfer.formats.card import card_read
from transfer.formats.letta import letta_read
from transfer.formats.mem0 import mem0_read
from transfer.formats.sillytavern import sillytavern_read
from transfer.lock import TransferBusy, one_at_a_time
from transfer.lore import (
    FragmentData,
    LoreFragment,
    entries_left_out,
    entries_of,
    fragments_of,
    key_of,
    keys_indexed,
    macros_replaced,
    triggers_said,
)
from transfer.models import (
    BridgeFormat,
    ImportedMemory,
    ImportedMessage,
    ImportedProposal,
    ImportRun,
    ProposalKind,
    RunStatus,
)

READERS = {
    BridgeFormat.SILLYTAVERN: sillytavern_read,
    BridgeFormat.CARD: card_read,
    BridgeFormat.LETTA: letta_read,
    BridgeFormat.MEM0: mem0_read,
}
KEPT_FOLDER = "imports"  # uploaded files, under their SHA-256, in the media folder
BATCH = 2_000  # messages (events, tags and markers) per transaction
LOOKUP_BATCH = 5_000  # origins per query when finding what is already here
PREVIEW_LISTED = 50  # memories, fragments and edges a preview lists; it counts the rest
FORMAT_NAMES = {
    "sillytavern-lorebook": "SillyTavern lorebook",
    "sillytavern-chat": "SillyTavern chat",
    "card": "character card",
    "letta": "Letta agent file",
    "mem0": "mem0 memories",
}

SAY_CLOSE = re.compile(r"</say>", re.IGNORECASE)
CHARACTER_NAMED = ("card", "letta", "sillytavern-chat")

Progress = Callable[[int, int], None]
IMPORT_TASK = "transfer.tasks.import_task"
# What a preview read by a worker goes through, in words, one after the other.
PREVIEW_STAGES = ("reading the file", "finding what is here already", "drawing up the preview")


class RunStopped(BridgeError):
    """The run was marked stopped part-way while it wrote: its worker had gone silent for so
    long that it was taken for dead. What it wrote stays; the next import finishes it."""


def file_refused(name: str, *, size: int, limit: int, more: bool = False) -> str | None:
    """Why a file of ``size`` bytes is not taken for an import (``more``: at least that many,
    read no further), in the words the Anvil's page and ``manage.py import_from`` share; None
    when it is taken."""
    if size == 0:
        return f"{name} is empty: there is nothing to import."
    if size > limit:
        said = f"more than {megabytes(limit)}" if more else megabytes(size)
        return (
            f"{name} is {said}; a file to import may be at most {megabytes(limit)} "
            "(SILENTSTAR_IMPORT_MAX_BYTES)."
        )
    return None


def bundle_read(*, format: str, data: bytes) -> Bundle:
    """The file read in its format; ``BridgeError`` names what is wrong with it."""
    if format not in READERS:
        raise BridgeError(f"“{format}” is not a format here: {', '.join(READERS)}")
    return READERS[format](data, zone=owner_time_zone())


def speakers_read(pairs: Iterable[str]) -> dict[str, str]:
    """``NAME=IDENTITY`` pairs (``--as``) as a mapping; ``BridgeError`` names a bad one."""
    mapping = {}
    for pair in pairs:
        name, equals, identity = pair.rpartition("=")
        if not equals or not name.strip() or not identity.strip():
            raise BridgeError(f"--as “{pair}”: write NAME=IDENTITY, like Seraphina=claude")
        mapping[name.strip()] = identity.strip()
    return mapping


@dataclass(frozen=True)
class Speaker:
    """A name the conversation gives, on one side, and the identity it is said by here."""

    name: str
    is_user: bool
    messages: int
    identity: str | None  # None: not known yet, to be asked for

    @property
    def side(self) -> str:
        return IdentitySide.USER if self.is_user else IdentitySide.COMPANION


@dataclass(frozen=True)
class SuggestionPlan:
    origin: str
    type: str
    content: str
    due: datetime | None
    at: datetime | None
    kept: dict
    here: bool  # imported before


@dataclass
class BridgePlan:
    """Everything an import of one file would do, read from the stores as they are now."""

    bundle: Bundle
    file_name: str
    format: str
    fragments: list[LoreFragment]
    draft_text: str  # "" when the file holds no lorebook
    draft_here: bool
    wake_section: str  # "" when the file says nothing of who the companion is
    wake_here: bool
    suggestions: list[SuggestionPlan]
    speakers: list[Speaker]
    messages_here: set[str] = field(repr=False)  # origins imported before
    problems: list[str] = field(default_factory=list)  # what stops the import, said to a person
    # What the draft and the wake section are written against: the fragments it changes as the
    # Gem holds them (a draft), the wake text in use.
    draft_base: str = ""
    wake_base: str = ""
    # The ambient prose addition naming the constant entries' keys ("" when none), whether an
    # earlier import proposed it, and the ambient prose in use it is written against.
    prose_section: str = ""
    prose_here: bool = False
    prose_base: str = ""
    # A card's first message, proposed as the greeting a new installation opens with ("" when
    # the card has none), whether an earlier import proposed it, and the greeting in use.
    greeting: str = ""
    greeting_here: bool = False
    greeting_base: str = ""

    @cached_property
    def left_out(self) -> list[LoreEntry]:
        """The disabled entries, of which no fragment is made."""
        return entries_left_out(self.bundle.entries)

    @cached_property
    def messages_new(self) -> list[Message]:
        return [m for m in self.bundle.messages if m.origin not in self.messages_here]

    @property
    def unknown_speakers(self) -> list[Speaker]:
        return [speaker for speaker in self.speakers if speaker.identity is None]

    @property
    def suggestions_new(self) -> list[SuggestionPlan]:
        return [s for s in self.suggestions if not s.here]

    @cached_property
    def draft_diff(self) -> DraftDiff | None:
        """The draft against the Gem as it is now."""
        return (
            draft_diff(draft_parse(self.draft_text), events_found=source_events)
            if self.draft_text
            else None
        )

    @cached_property
    def turns(self) -> list[str]:
        """The new messages as the Mirror would read them, one transcript per turn."""
        identity_of = {(s.name, s.is_user): s.identity or s.name for s in self.speakers}
        return turn_transcripts(
            (m.at, identity_of[(m.speaker, m.is_user)], not m.is_user, m.text)
            for m in self.messages_new
        )

    @cached_property
    def estimate(self) -> CompressionEstimate:
        return compression_estimate(self.turns)

    @property
    def is_empty(self) -> bool:
        """Whether importing would add nothing."""
        return (
            (not self.draft_text or self.draft_here)
            and (not self.wake_section or self.wake_here)
            and (not self.prose_section or self.prose_here)
            and (not self.greeting or self.greeting_here)
            and not self.suggestions_new
            and not self.messages_new
        )


def more_said(listed: int, one: str, many: str = "") -> str:
    """What a preview that lists the first ``PREVIEW_LISTED`` of ``listed`` things leaves out:
    "and 999,950 more memories"; "" when it lists them all."""
    hidden = listed - PREVIEW_LISTED
    if hidden <= 0:
        return ""
    return f"and {counted(hidden, f'more {one}', f'more {many or one + "s"}')}"


def draft_diff_listed(diff: DraftDiff) -> tuple[DraftDiff, str]:
    """The part of a draft's diff a preview lists, the first ``PREVIEW_LISTED`` fragments'
    changes and edges, and what it leaves out in words ("and 99,950 more fragments, and
    259,900 more edges"; "" when nothing)."""
    keys = [*diff.fragments_created, *diff.fragments_changed()]
    listed = set(keys[:PREVIEW_LISTED])
    added, removed, relabelled = diff.edges_added, diff.edges_removed, diff.edges_relabelled
    room = PREVIEW_LISTED - len(added) - len(removed)
    shown = replace(
        diff,
        fragments_created=[key for key in diff.fragments_created if key in listed],
        tiers_changed=[change for change in diff.tiers_changed if change.key in listed],
        sources_added=[source for source in diff.sources_added if source.key in listed],
        edges_added=added[:PREVIEW_LISTED],
        edges_removed=removed[: max(PREVIEW_LISTED - len(added), 0)],
        edges_relabelled=relabelled[: max(room, 0)],
    )
    more = [
        more_said(len(keys), "fragment"),
        more_said(len(added) + len(removed) + len(relabelled), "edge"),
    ]
    return shown, ", ".join(part for part in more if part)


def _digest(kind: str, text: str) -> str:
    return hashlib.sha256(f"{kind}\n{text}".encode()).hexdigest()


@dataclass(frozen=True)
class AddedTo:
    """The text kept as versions that a proposed addition of one kind is added to."""

    what: str  # what a person calls it
    current: Callable[[], str]  # the text in use
    model: type[VersionedText]
    text: dict[str, str]  # which text of ``model`` it is (``gem.services.text_version_add``)
    replaces: bool = False  # the proposal is the whole text (a greeting), not an addition


ADDED_TO = {
    ProposalKind.WAKE: AddedTo(
        "wake text",
        lambda: wake_text_current(WakeTextKind.WAKE),
        WakeText,
        {"kind": WakeTextKind.WAKE},
    ),
    ProposalKind.PROSE: AddedTo("ambient prose", ambient_prose_current, AmbientProse, {}),
    ProposalKind.GREETING: AddedTo(
        "greeting",
        lambda: wake_text_current(WakeTextKind.GREETING),
        WakeText,
        {"kind": WakeTextKind.GREETING},
        replaces=True,
    ),
}


def text_current(kind: str) -> str:
    """The text a proposal of ``kind`` adds to, as it is in use: the wake text, or the ambient
    prose."""
    return ADDED_TO[kind].current()


def text_added(current: str, section: str, *, replaces: bool = False) -> str:
    """The text a proposal adds to, ``current`` (``text_current``), with ``section`` after it
    (unchanged when it is there already); with ``replaces``, ``section`` itself."""
    if replaces:
        return section or current
    if not section or section in current:
        return current
    return f"{current.rstrip()}\n\n{section}\n"


def bridge_plan(
    bundle: Bundle, *, file_name: str, format: str, speakers: dict[str, str] | None = None
) -> BridgePlan:
    """What importing ``bundle`` would do. Reads the stores, writes nothing.

    ``speakers``: names of the conversation mapped to identities (``--as``); a name not
    mapped is its identity's when an identity has that name on the same side.
    """
    identities = identities_current()
    user_name = identities.users[0] if identities.users else "the person"
    # A lorebook's name is the book's; a card's, an agent's or a chat's is the character's.
    character = bundle.name if bundle.format in CHARACTER_NAMED else ""
    macros = {"char": character or identities.default_companion, "user": user_name}
    existing = (
        keys_indexed(Fragment.objects.order_by("key").values_list("key", flat=True))
        if bundle.entries
        else {}
    )
    fragments = fragments_of(bundle.entries, names=macros, existing=existing)
    draft_text, draft_base = (
        _draft_text(bundle, fragments, file_name=file_name) if fragments else ("", "")
    )
    wake_section = _wake_section(bundle, macros)
    prose = ambient_prose_current() if any(f.constant for f in fragments) else ""
    prose_section = _prose_section(bundle, fragments, prose=prose)
    greeting = _greeting(bundle)
    plan = BridgePlan(
        bundle=bundle,
        file_name=file_name,
        format=format,
        fragments=fragments,
        draft_text=draft_text,
        draft_here=bool(draft_text) and _proposal_here(ProposalKind.DRAFT, fragments),
        wake_section=wake_section,
        wake_here=bool(wake_section) and _proposal_here(ProposalKind.WAKE, wake_section),
        suggestions=_suggestions_planned(bundle),
        speakers=[],
        messages_here=_origins_here(ImportedMessage, [m.origin for m in bundle.messages]),
        draft_base=draft_base,
        wake_base=wake_text_current("wake") if wake_section else "",
        prose_section=prose_section,
        prose_here=bool(prose_section) and _proposal_here(ProposalKind.PROSE, prose_section),
        prose_base=prose if prose_section else "",
        greeting=greeting,
        greeting_here=bool(greeting) and _proposal_here(ProposalKind.GREETING, greeting),
        greeting_base=wake_text_current(WakeTextKind.GREETING) if greeting else "",
    )
    plan.speakers = _speakers_mapped(bundle.messages, speakers or {}, identities, plan.problems)
    return plan


def _proposal_here(kind: str, content) -> bool:
    return ImportedProposal.objects.filter(digest=_proposal_digest(kind, content)).exists()


def _proposal_digest(kind: str, content) -> str:
    """A draft is the same when its fragments are, as the file gives them (whatever the Gem
    holds around them: once applied, a fragment the file made is one it folds into)."""
    if kind == ProposalKind.DRAFT:
        content = json.dumps(
            [[f.key, f.tiers, f.edges, f.triggers] for f in content],
            ensure_ascii=False,
            sort_keys=True,
        )
    return _digest(kind, content)


def _draft_text(
    bundle: Bundle, fragments: list[LoreFragment], *, file_name: str
) -> tuple[str, str]:
    """The draft of the fragments and what it is written against (the Gem's fragments among
    them, as a draft): each sets the tiers the file gives it, and its triggers; a fold adds the
    tiers after the fragment's own and the triggers to its own (``_folded``). A fragment an edge
    is proposed for lists the Gem's edges touching it too, since a draft's edges are the whole
    set; an edge the Gem has between the same two keys stays as it is."""
    keys = {fragment.key for fragment in fragments}
    now = fragments_now(keys)
    held = list(now.values())
    existing = {edge for fragment in held for edge in fragment.edges}
    pairs = {(edge.source, edge.target) for edge in existing}
    targets = {target for fragment in fragments for target, _ in fragment.edges}
    known = keys | set(Fragment.objects.filter(key__in=targets).values_list("key", flat=True))
    proposed = {
        DraftEdge(fragment.key, target, relation)
        for fragment in fragments
        for target, relation in fragment.edges
        if (fragment.key, target) not in pairs and target in known
    }
    touched = {key for edge in proposed for key in (edge.source, edge.target)}
    edges: dict[str, set[DraftEdge]] = {key: set() for key in touched}
    for edge in existing | proposed:
        for key in {edge.source, edge.target} & touched:
            edges[key].add(edge)
    # Folded before the preface is written: a fold says there what it could not add.
    sections = [
        replace(
            _folded(fragment, now.get(fragment.key)),
            edges=edges_ordered(fragment.key, edges[fragment.key])
            if fragment.key in touched
            else None,
        )
        for fragment in fragments
    ]
    draft = Draft(fragments=sections, preface=_preface(bundle, fragments, file_name=file_name))
    return draft_render(draft_written(draft, base=held)), (
        draft_render(Draft(fragments=held)) if held else ""
    )


def _folded(fragment: LoreFragment, held: DraftFragment | None) -> DraftFragment:
    """A fragment of the file as its draft section: as the file gives it; or, folded into the
    fragment the Gem holds, each tier the file gives after that tier's text (unless the text
    holds it already, so a second import adds nothing twice) and the file's triggers after its
    triggers (``triggers_said``; the fragment's notes say any past the most a fragment
    has)."""
    triggers = list(fragment.triggers)
    if not fragment.fold or held is None:
        return DraftFragment(key=fragment.key, tiers=fragment.tiers, triggers=triggers or None)
    tiers = {}
    for tier, text in fragment.tiers.items():
        before = held.tiers.get(tier, "")
        tiers[tier] = before if text in before else f"{before.rstrip()}\n\n{text}".lstrip("\n")
    own = held.triggers or []
    joined, beyond = triggers_said(fragment.key, own, triggers)
    fragment.notes += [beyond] if beyond else []
    added = len(joined) > len(own)
    return DraftFragment(key=fragment.key, tiers=tiers, triggers=joined if added else None)


def _preface(bundle: Bundle, fragments: list[LoreFragment], *, file_name: str) -> str:
    """What the draft comes from, entry by entry, with what was said of each (its comment, a
    fold, a key that is no trigger) and the disabled entries left out (a preface is kept, never
    applied)."""
    what = FORMAT_NAMES.get(bundle.format, bundle.format)
    named = f" “{bundle.name}”" if bundle.name else ""
    lines = [
        f"Imported from the {what}{named} ({file_name}): "
        f"{counted(len(bundle.entries), 'entry', 'entries')}."
    ]
    lines += [
        f"Left out: {said}." for said in entries_left_out_said(entries_left_out(bundle.entries))
    ]
    for fragment in fragments:
        lines.append(f"- {fragment.key} ← {', '.join(fragment.entries)}")
        lines += [f"  - {note}" for note in fragment.notes]
    return "\n".join(lines)


SAID_CHARS_MAX = 60  # of an entry's name or key quoted in a line of the preview


def entries_left_out_said(entries: Sequence[LoreEntry]) -> list[str]:
    """What the preview and the draft's preface say of each disabled entry left out: its name
    and key cut short, since the whole entry is kept on the proposal."""
    return [
        f"{entry.where}"
        + (f" (“{_cut(entry.note or entry.name)}”)" if entry.note or entry.name else "")
        + ", disabled there: a fragment here has no off switch, and naming "
        + (f"its key “{_cut(entry.keys[0])}”" if entry.keys else "it")
        + " would wake it"
        for entry in entries
    ]


def _cut(text: str) -> str:
    return text if len(text) <= SAID_CHARS_MAX else f"{text[: SAID_CHARS_MAX - 1]}…"


def _prose_section(bundle: Bundle, fragments: list[LoreFragment], *, prose: str) -> str:
    """The addition to the ambient prose that names the fragments of the entries always in the
    other app's context (constant ones), those the ambient prose in use (``prose``) does not
    name yet; "" when there are none. Ambient prose is authored: this is proposed, never
    written."""
    keys = [fragment.key for fragment in fragments if fragment.constant]
    if not keys:
        return ""
    named = set(AMBIENT_KEY.findall(prose))
    keys = [key for key in keys if key not in named]
    if not keys:
        return ""
    what = FORMAT_NAMES.get(bundle.format, bundle.format)
    named = f" “{bundle.name}”" if bundle.name else ""
    listed = ", ".join(f"[{key}]" for key in keys)
    return f"Always in mind from the {what}{named}: {listed}."


def _wake_section(bundle: Bundle, macros: dict[str, str]) -> str:
    if not bundle.wake:
        return ""
    what = FORMAT_NAMES.get(bundle.format, bundle.format)
    title = f"# Who you are: {bundle.name}" if bundle.name else "# Who you are"
    parts = [f"{title}\n\n(From the {what}.)"]
    parts += [
        f"## {part.title}\n\n{macros_replaced(part.text.strip(), macros)}" for part in bundle.wake
    ]
    return "\n\n".join(parts)


def _greeting(bundle: Bundle) -> str:
    """A card's first message as the greeting: ``{{char}}`` and ``{{user}}`` as the greeting's
    ``{name}`` and ``{you}``, the names the companion and the person have here when it is said."""
    first = (bundle.greetings.get("first_mes") or "").strip()
    if not first:
        return ""
    return macros_replaced(first, {"char": "{name}", "user": "{you}"})


def _suggestions_planned(bundle: Bundle) -> list[SuggestionPlan]:
    here = _origins_here(ImportedMemory, [memory.origin for memory in bundle.memories])
    zone = owner_time_zone()
    planned = []
    for memory in bundle.memories:
        type, due = fact_typed(memory.text, at=memory.at or timezone.now(), zone=zone)
        planned.append(
            SuggestionPlan(
                origin=memory.origin,
                type=type,
                content=memory.text.strip(),
                due=due,
                at=memory.at,
                kept=memory.kept,
                here=memory.origin in here,
            )
        )
    return planned


def _origins_here(model, origins: Sequence[str]) -> set[str]:
    """The origins among ``origins`` that ``model`` already marks."""
    here: set[str] = set()
    for start in range(0, len(origins), LOOKUP_BATCH):
        batch = origins[start : start + LOOKUP_BATCH]
        here.update(model.objects.filter(origin__in=batch).values_list("origin", flat=True))
    return here


def _speakers_mapped(
    messages: Sequence[Message], mapping: dict[str, str], identities, problems: list[str]
) -> list[Speaker]:
    """Each speaker of the conversation with the identity it is said by, checking the mapping:
    a mapped identity must exist and be on the speaker's side."""
    counts: dict[tuple[str, bool], int] = {}
    for message in messages:
        counts[(message.speaker, message.is_user)] = (
            counts.get((message.speaker, message.is_user), 0) + 1
        )
    sides = identities.sides
    by_fold = {name.casefold(): name for name in identities.names}
    unused = set(mapping)
    speakers = []
    for (name, is_user), count in counts.items():
        side = IdentitySide.USER if is_user else IdentitySide.COMPANION
        identity = mapping.get(name)
        unused.discard(name)
        if identity is not None:
            if identity not in sides:
                problems.append(
                    f"“{identity}” (for {name}) is not an identity here: "
                    f"{', '.join(identities.names)}"
                )
                identity = None
            elif sides[identity] != side:
                problems.append(
                    f"{name} speaks on the {side}’s side, and “{identity}” is on the "
                    f"{sides[identity]}’s"
                )
                identity = None
        else:
            found = by_fold.get(name.casefold()) or by_fold.get(key_of(name))
            identity = found if found and sides[found] == side else None
        speakers.append(Speaker(name, is_user, count, identity))
    problems += [f"--as {name}: nobody of that name speaks in this file" for name in sorted(unused)]
    return speakers


@dataclass
class BridgeReport:
    """What an import added, and what it found already here."""

    run: ImportRun
    counts: dict[str, int]

    def __str__(self) -> str:
        said = counts_said(self.counts)
        return (", ".join(said) if said else "nothing new: it was all here already") + "."


COUNT_WORDS = [  # what a run's counts say, one and many
    ("events", "message logged as an event", "messages logged as events"),
    ("events_here", "message already here", "messages already here"),
    ("suggestions", "memory staged as a suggestion", "memories staged as suggestions"),
    ("suggestions_here", "memory already here", "memories already here"),
    ("drafts", "draft proposed", "drafts proposed"),
    ("wakes", "wake text proposed", "wake texts proposed"),
    ("prose_additions", "ambient prose addition proposed", "ambient prose additions proposed"),
    ("greetings", "greeting proposed", "greetings proposed"),
    ("proposals_here", "proposal already here", "proposals already here"),
]


def counts_said(counts: dict) -> list[str]:
    """A run's counts in words, those that are not naught."""
    return [counted(counts[name], one, many) for name, one, many in COUNT_WORDS if counts.get(name)]


def _refusals(plan: BridgePlan) -> list[str]:
    """What keeps a plan from being imported: a speaker without an identity, a wrong mapping."""
    return plan.problems + [
        f"Who is “{s.name}” (on the {s.side}’s side, {counted(s.messages, 'message')})? "
        f'Map the name to an identity (in the preview, or --as "{s.name}=IDENTITY")'
        for s in plan.unknown_speakers
    ]


def bridge_import(
    plan: BridgePlan,
    *,
    file_sha256: str,
    user=None,
    run: ImportRun | None = None,
    progress: Progress | None = None,
    batch: int = BATCH,
) -> BridgeReport:
    """Write what ``plan`` says, as ``run`` (a new one when None). Refused (``BridgeError``)
    while a speaker has no identity or the mapping is wrong, before anything is written."""
    if problems := _refusals(plan):
        raise BridgeError("\n".join(problems))
    if run is None:
        run = ImportRun.objects.create(
            format=plan.format,
            file_name=plan.file_name[:255],
            file_sha256=file_sha256,
            user=user,
            speakers=_speakers_chosen(plan),
            beat_at=timezone.now(),
        )
    counts = {
        "messages": len(plan.bundle.messages),
        "drafts": 0,
        "wakes": 0,
        "prose_additions": 0,
        "greetings": 0,
        "proposals_here": 0,
        "suggestions": 0,
        "suggestions_here": 0,
        "events": 0,
        "events_here": 0,
    }
    _proposals_stage(plan, run, counts)
    _suggestions_stage(plan, run, counts)
    _beat(run.pk, counts=counts)

    def written(done: int, total: int) -> None:
        if done < total:  # the last batch's counts are saved with the run done
            _beat(run.pk, counts=counts)
        if progress is not None:
            progress(done, total)

    _events_write(plan, run, counts, progress=written, batch=batch)
    _beat(run.pk, counts=counts, status=RunStatus.DONE, finished_at=timezone.now())
    run.refresh_from_db()
    return BridgeReport(run, counts)


def _beat(run_id: int, **fields) -> None:
    """A running run's sign of life, with ``fields`` saved; ``RunStopped`` when it is running no
    more (marked stopped while its worker was silent: it must write nothing more)."""
    beating = ImportRun.objects.filter(pk=run_id, status=RunStatus.RUNNING)
    if not beating.update(beat_at=timezone.now(), **fields):
        raise RunStopped(
            "This import was marked stopped part-way while it ran: its worker had been silent "
            "too long. What it wrote stays; importing the same file again finishes it."
        )


def _speakers_chosen(plan: BridgePlan) -> dict[str, str]:
    return {s.name: s.identity for s in plan.speakers if s.identity is not None}


def import_enqueue(*, plan: BridgePlan, file_sha256: str, user) -> ImportRun:
    """Check a plan of a kept file (``file_keep``) and leave its import to a worker: a long
    chat takes longer than a page should wait. The run's page follows it."""
    if problems := _refusals(plan):
        raise BridgeError("\n".join(problems))
    run = ImportRun.objects.create(
        format=plan.format,
        file_name=plan.file_name[:255],
        file_sha256=file_sha256,
        user=user,
        status=RunStatus.QUEUED,
        speakers=_speakers_chosen(plan),
        counts={"messages": len(plan.bundle.messages)},
    )
    async_task(IMPORT_TASK, run.pk, group="transfer")
    run.refresh_from_db()
    return run


def import_queued_run(*, run_id: int) -> ImportRun | None:
    """Claim a queued or waiting import and run it; None when it was neither (another worker
    took it). While another restore or import holds the installation, the run waits, holding no
    worker: the import before it gives it a worker when it ends (``imports_waiting_next``), or
    the minutely recovery does. A file that no longer reads fails it with the reason and writes
    nothing."""
    claimed = ImportRun.objects.filter(
        pk=run_id, status__in=(RunStatus.QUEUED, RunStatus.WAITING)
    ).update(status=RunStatus.RUNNING, beat_at=timezone.now())
    if not claimed:
        return None
    held = True
    try:
        with one_at_a_time(what="import"):
            _beat(run_id, started_at=timezone.now())
            run = ImportRun.objects.get(pk=run_id)
            plan = kept_plan(
                sha256=run.file_sha256,
                format=run.format,
                file_name=run.file_name,
                speakers=run.speakers,
            )
            _beat(run_id)
            bridge_import(plan, file_sha256=run.file_sha256, run=run)
    except TransferBusy:
        held = False
        ImportRun.objects.filter(pk=run_id, status=RunStatus.RUNNING).update(
            status=RunStatus.WAITING, beat_at=None
        )
    except RunStopped:
        pass  # marked stopped by the recovery meanwhile: what it wrote stays
    except BridgeError as error:
        _failed(run_id, f"Nothing more was imported: {error}")
    except Exception as error:
        _failed(run_id, f"The import stopped on an unexpected error: {error!r}.")
        raise
    finally:
        if held:
            imports_waiting_next()
    return ImportRun.objects.get(pk=run_id)


def _failed(run_id: int, error: str) -> None:
    ImportRun.objects.filter(pk=run_id).update(status=RunStatus.FAILED, error=error)


def imports_waiting_next() -> ImportRun | None:
    """Give the import that has waited longest a worker; it, or None when none waits."""
    waiting = ImportRun.objects.filter(status=RunStatus.WAITING).order_by("pk").first()
    if waiting is not None:
        async_task(IMPORT_TASK, waiting.pk, group="transfer")
    return waiting


def import_holder(run: ImportRun) -> ImportRun | None:
    """The import a waiting run waits for, when an import (not a restore) holds the
    installation."""
    return (
        ImportRun.objects.filter(status=RunStatus.RUNNING).exclude(pk=run.pk).order_by("pk").first()
    )


def run_finished_by(run: ImportRun) -> ImportRun | None:
    """The later import of the same file that finished what ``run`` left, when ``run`` stopped
    or failed part-way and one did."""
    if run.status not in (RunStatus.STOPPED, RunStatus.FAILED):
        return None
    return (
        ImportRun.objects.filter(file_sha256=run.file_sha256, status=RunStatus.DONE, pk__gt=run.pk)
        .order_by("pk")
        .first()
    )


def imports_recover(*, stale_after: timedelta, now: datetime | None = None) -> list[int]:
    """Mark stopped part-way the imports whose worker gave no sign of life for ``stale_after``
    (its claim, a batch written), keeping what they wrote, and fail the previews whose worker
    did the same; then, when no import runs, give a waiting one a worker. Return the ids of the
    runs stopped.

    Should its worker be alive after all, its next beat finds it stopped, and it stops there."""
    now = now or timezone.now()
    cutoff = now - stale_after
    silent = Q(beat_at__lt=cutoff) | Q(beat_at__isnull=True, started_at__lt=cutoff)
    seconds = counted(round(stale_after.total_seconds()), "second")
    stale = ImportRun.objects.filter(silent, status=RunStatus.RUNNING)
    ids = list(stale.values_list("pk", flat=True))
    stale.filter(pk__in=ids).update(
        status=RunStatus.STOPPED,
        error=f"Its worker stopped: nothing was heard from it for {seconds}.",
    )
    ImportRun.objects.filter(status=RunStatus.PREVIEWING, beat_at__lt=cutoff).update(
        status=RunStatus.FAILED,
        error=f"The worker reading the file for its preview stopped (nothing was heard from it "
        f"for {seconds}): upload the file again.",
    )
    if not ImportRun.objects.filter(status=RunStatus.RUNNING).exists():
        imports_waiting_next()
    return ids


def preview_enqueue(*, sha256: str, format: str, file_name: str, user, task: str) -> ImportRun:
    """Leave the preview of a kept file (``file_keep``) too large for a page request to a
    worker: ``task`` reads and plans it with ``preview_queued_run``, and the run's page follows
    it, then shows the preview with its Import button (``preview_import``)."""
    run = ImportRun.objects.create(
        format=format,
        file_name=file_name[:255],
        file_sha256=sha256,
        user=user,
        status=RunStatus.PREVIEWING,
        preview=_stage(0),
    )
    async_task(task, run.pk, group="transfer")
    run.refresh_from_db()
    return run


def _stage(step: int, *, size: int | None = None) -> dict:
    said = PREVIEW_STAGES[step] + (f" ({megabytes(size)})" if size is not None else "")
    return {"stage": said, "step": step, "steps": len(PREVIEW_STAGES)}


@dataclass(frozen=True)
class PreviewReady:
    """What the preview page of a plan needs once the plan itself is gone."""

    html: str  # what the import would do, drawn up
    speakers: list[Speaker]
    is_empty: bool


def preview_queued_run(*, run_id: int, render: Callable[[BridgePlan], str]) -> ImportRun | None:
    """Claim a run waiting for its preview, read and plan its file, and keep the preview as
    ``render`` draws it up, with the speakers to ask for; None when another worker took it. A
    file that is refused fails the run with every problem, nothing written."""
    claimed = ImportRun.objects.filter(
        pk=run_id, status=RunStatus.PREVIEWING, beat_at__isnull=True
    ).update(beat_at=timezone.now())
    if not claimed:
        return None
    run = ImportRun.objects.get(pk=run_id)

    def stage(step: int, **said) -> None:
        ImportRun.objects.filter(pk=run_id, status=RunStatus.PREVIEWING).update(
            beat_at=timezone.now(), preview=_stage(step, **said)
        )

    try:
        data = file_kept(run.file_sha256)
        stage(0, size=len(data))
        bundle = bundle_read(format=run.format, data=data)
        del data
        stage(1)
        plan = bridge_plan(bundle, file_name=run.file_name, format=run.format)
        stage(2)
        html = render(plan)
    except BridgeError as error:
        ImportRun.objects.filter(pk=run_id, status=RunStatus.PREVIEWING).update(
            status=RunStatus.FAILED,
            error="\n".join([f"“{run.file_name}” was refused, nothing imported:", str(error)]),
        )
    else:
        ready = PreviewReady(html=html, speakers=plan.speakers, is_empty=plan.is_empty)
        ImportRun.objects.filter(pk=run_id, status=RunStatus.PREVIEWING).update(
            status=RunStatus.PREVIEWED,
            beat_at=timezone.now(),
            counts={"messages": len(plan.bundle.messages)},
            preview=asdict(ready),
        )
    return ImportRun.objects.get(pk=run_id)


def preview_ready(run: ImportRun) -> PreviewReady:
    """The preview a worker kept for ``run``."""
    kept = run.preview
    return PreviewReady(
        html=kept["html"],
        speakers=[Speaker(**speaker) for speaker in kept["speakers"]],
        is_empty=kept["is_empty"],
    )


def preview_import(*, run_id: int, speakers: dict[str, str], user) -> ImportRun:
    """Queue the import of a run previewed by a worker, its speakers as chosen; the worker
    plans the file again as it imports (``import_queued_run``), refusing a wrong mapping then.
    ``BridgeError`` when the run is no longer waiting to be imported."""
    queued = ImportRun.objects.filter(pk=run_id, status=RunStatus.PREVIEWED).update(
        status=RunStatus.QUEUED,
        speakers=speakers,
        user=user,
        started_at=timezone.now(),
        beat_at=None,
    )
    if not queued:
        raise BridgeError("This preview was imported already: its page follows the import.")
    async_task(IMPORT_TASK, run_id, group="transfer")
    return ImportRun.objects.get(pk=run_id)


def file_keep(data: bytes) -> str:
    """Keep an uploaded file under its SHA-256 (once: the same bytes have the same name)."""
    sha256 = hashlib.sha256(data).hexdigest()
    name = f"{KEPT_FOLDER}/{sha256}"
    if not default_storage.exists(name):
        default_storage.save(name, ContentFile(data))
    return sha256


def kept_plan(
    *, sha256: str, format: str, file_name: str, speakers: dict[str, str] | None = None
) -> BridgePlan:
    """The plan of importing a kept file (``BridgeError`` when it cannot be read)."""
    bundle = bundle_read(format=format, data=file_kept(sha256))
    return bridge_plan(bundle, file_name=file_name, format=format, speakers=speakers)


def file_kept(sha256: str) -> bytes:
    """The kept file of that SHA-256; ``BridgeError`` when it is gone or is not what was kept."""
    try:
        with default_storage.open(f"{KEPT_FOLDER}/{sha256}", "rb") as kept:
            data = kept.read()
    except FileNotFoundError:
        raise BridgeError("The uploaded file is no longer kept here: upload it again.") from None
    if hashlib.sha256(data).hexdigest() != sha256:
        raise BridgeError("The kept file has changed since it was uploaded: upload it again.")
    return data


def _proposals_stage(plan: BridgePlan, run: ImportRun, counts: dict[str, int]) -> None:
    bundle = plan.bundle
    what = FORMAT_NAMES.get(bundle.format, bundle.format)
    named = f" “{bundle.name}”" if bundle.name else ""
    # A card's greetings ride on each proposal, for the chat's greeting to find.
    file = {"file": bundle.kept} | ({"greetings": bundle.greetings} if bundle.greetings else {})
    staged = []
    if plan.draft_text:
        staged.append(
            (
                ProposalKind.DRAFT,
                _proposal_digest(ProposalKind.DRAFT, plan.fragments),
                f"{counted(len(plan.fragments), 'fragment')} from the {what}{named}",
                plan.draft_text,
                {
                    **file,
                    "entries": {e.where: _entry_kept(e) for e in bundle.entries if e.enabled},
                    "left_out": {e.where: _entry_kept(e, whole=True) for e in plan.left_out},
                },
                "drafts",
                plan.draft_base,
            )
        )
    if plan.wake_section:
        staged.append(
            (
                ProposalKind.WAKE,
                _proposal_digest(ProposalKind.WAKE, plan.wake_section),
                f"Who {bundle.name or 'the companion'} is, from the {what}",
                plan.wake_section,
                file,
                "wakes",
                plan.wake_base,
            )
        )
    if plan.prose_section:
        staged.append(
            (
                ProposalKind.PROSE,
                _proposal_digest(ProposalKind.PROSE, plan.prose_section),
                f"What is always in mind, from the {what}{named}",
                plan.prose_section,
                file,
                "prose_additions",
                plan.prose_base,
            )
        )
    if plan.greeting:
        staged.append(
            (
                ProposalKind.GREETING,
                _proposal_digest(ProposalKind.GREETING, plan.greeting),
                f"How {bundle.name or 'the companion'} greets you, from the {what}",
                plan.greeting,
                file,
                "greetings",
                plan.greeting_base,
            )
        )
    for kind, digest, title, text, kept, counter, base in staged:
        _, created = ImportedProposal.objects.get_or_create(
            digest=digest,
            defaults={
                "kind": kind,
                "run": run,
                "title": title[:200],
                "text": text,
                "kept": kept,
                "base": base,
            },
        )
        counts[counter if created else "proposals_here"] += 1


def _entry_kept(entry: LoreEntry, *, whole: bool = False) -> dict:
    """What a proposal keeps of an entry: the fields it has no place for, and its comment and
    secondary keys, which no fragment holds; ``whole``, for an entry left out, everything."""
    kept = dict(entry.kept)
    if entry.note:
        kept["comment"] = entry.note
    if entry.secondary_keys:
        kept["secondary_keys"] = list(entry.secondary_keys)
    if whole:
        kept |= {
            "name": entry.name,
            "keys": list(entry.keys),
            "content": entry.content,
            "constant": entry.constant,
            "enabled": entry.enabled,
        }
    return kept


def _suggestions_stage(plan: BridgePlan, run: ImportRun, counts: dict[str, int]) -> None:
    what = FORMAT_NAMES.get(plan.bundle.format, plan.bundle.format)
    with transaction.atomic(using=router.db_for_write(TagSuggestion)):
        here = _origins_here(ImportedMemory, [s.origin for s in plan.suggestions])
        fresh = [s for s in plan.suggestions if s.origin not in here]
        counts["suggestions_here"] = len(plan.suggestions) - len(fresh)
        created = suggestions_stage(
            proposer=Proposer.IMPORT,
            suggestions=[
                Staged(
                    type=s.type,
                    content=s.content,
                    due=s.due,
                    reason=f"Remembered in {what} ({s.origin})"
                    + (f" on {s.at:%Y-%m-%d}" if s.at else ""),
                    at=s.at,
                )
                for s in fresh
            ],
        )
        ImportedMemory.objects.bulk_create(
            ImportedMemory(suggestion=suggestion, origin=s.origin, run_id=run.pk, kept=s.kept)
            for suggestion, s in zip(created, fresh, strict=True)
        )
        counts["suggestions"] = len(created)


def _events_write(
    plan: BridgePlan,
    run: ImportRun,
    counts: dict[str, int],
    *,
    progress: Progress | None,
    batch: int,
) -> None:
    """The new messages as events, ``batch`` to a transaction with their tags and markers.

    Written in plain INSERTs: a long chat is a hundred thousand rows, and the ORM's bulk insert
    takes several times longer to prepare them than the database takes to write them."""
    identity_of = {(s.name, s.is_user): s.identity for s in plan.speakers}
    names = identities_current().names
    messages = plan.bundle.messages
    total = len(messages)
    done = 0
    for start in range(0, total, batch):
        chunk = messages[start : start + batch]
        with transaction.atomic(using=router.db_for_write(Event)):
            here = _origins_here(ImportedMessage, [m.origin for m in chunk])
            fresh = [m for m in chunk if m.origin not in here]
            counts["events_here"] += len(chunk) - len(fresh)
            texts = [message_text(m) for m in fresh]
            ids = _rows_insert(
                Event,
                ("ts", "content", "actor", "image"),
                [
                    (m.at, text, identity_of[(m.speaker, m.is_user)] or "", "")
                    for m, text in zip(fresh, texts, strict=True)
                ],
            )
            _rows_insert(
                EventTag,
                ("event", "tag"),
                [
                    (event_id, tag)
                    for event_id, m, text in zip(ids, fresh, texts, strict=True)
                    for tag in _tags(m, text, names)
                ],
            )
            _rows_insert(
                ImportedMessage,
                ("event", "origin", "run_id", "speaker", "kept"),
                [
                    (event_id, m.origin, run.pk, m.speaker, m.kept)
                    for event_id, m in zip(ids, fresh, strict=True)
                ],
            )
            counts["events"] += len(ids)
        done += len(chunk)
        if progress is not None:
            progress(done, total)


def message_text(message: Message) -> str:
    """The event's text of a message: the person's as written; the companion's in ``<say>``,
    since the tag language shows a companion only what is inside a display tag. A ``</say>``
    in the text is written ``</ say>`` (not a tag), so the whole message is said."""
    if message.is_user:
        return message.text
    return f"<say>{SAY_CLOSE.sub('</ say>', message.text)}</say>"


def _tags(message: Message, text: str, names: list[str]) -> list[str]:
    """The tags an event's text holds, as the chat's parser reads them. A tag is written in
    angle brackets: a message without one holds none but the ``say`` it was wrapped in."""
    if "<" not in message.text:
        return [] if message.is_user else ["say"]
    return sorted(parse(text, identities=names).tags)


def _rows_insert(model, names: Sequence[str], rows: list[tuple]) -> list[int]:
    """``rows`` of ``model`` (values of the fields ``names``) in one INSERT; their new ids, in
    the rows' order (a store numbers the rows of one INSERT in the order they are listed)."""
    if not rows:
        return []
    connection = connections[router.db_for_write(model)]
    fields = [model._meta.get_field(name) for name in names]
    columns = ", ".join(connection.ops.quote_name(field.column) for field in fields)
    values = ", ".join([f"({', '.join(['%s'] * len(fields))})"] * len(rows))
    parameters = [
        field.get_db_prep_save(value, connection)
        for row in rows
        for field, value in zip(fields, row, strict=True)
    ]
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {connection.ops.quote_name(model._meta.db_table)} ({columns}) "
            f"VALUES {values} RETURNING {connection.ops.quote_name(model._meta.pk.column)}",
            parameters,
        )
        return sorted(row[0] for row in cursor.fetchall())


def fragments_exported() -> list[LoreEntry]:
    """Every fragment as lorebook entries, with its edges out and its triggers, in key order."""
    edges: dict[str, list[tuple[str, str]]] = {}
    for source, target, relation in FragmentEdge.objects.order_by(
        "source_id", "target_id"
    ).values_list("source_id", "target_id", "relation"):
        edges.setdefault(source, []).append((target, relation))
    return entries_of(
        FragmentData(key, *tiers, edges=tuple(edges.get(key, ())), triggers=tuple(triggers))
        for key, triggers, *tiers in Fragment.objects.order_by("key").values_list(
            "key", "triggers", *TIERS
        )
    )
