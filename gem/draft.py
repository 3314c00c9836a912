"""The draft format: the Markdown the Lens writes for fragments, read back as proposed changes.

The format belongs to the Gem (its keys, tiers, triggers and edges): ``draft_render`` writes it
(what the Lens prints), ``draft_parse`` reads it, ``draft_diff`` compares it with the Gem, and
``gem.drafts.draft_apply`` applies it.

A draft is plain text, one line per ``\\n``; a draft whose every line break is ``\\r\\n`` (as
a browser sends a text area) is read with ``\\n``, and tiers that differ from the Gem only in
``\\r\\n`` against ``\\n`` are no change::

    Anything before the first fragment heading is the preface: kept, never applied.

    # fairy

    ## ambient

    A small light that follows her home.

    ## recognition

    ~~~
    ## A heading inside the tier's text

    Text the Lens could not write plainly is fenced, and kept exactly.
    ~~~

    ## inventory

    ## triggers

    - wisp
    - the little light

    ## edges

    - → well: lives in
    - ← moon

    ## sources

    - events 12, 40

    ## working memory

    - wm 7 · thought · active: she asked about the fairy again

The shape, exactly:

- ``# KEY`` starts a fragment; the key must pass ``gem.models.KEY_VALIDATOR`` and appear once.
  A key the Gem does not have is created.
- ``## ambient``, ``## recognition``, ``## inventory``: a tier. The text runs to the next ``#``
  or ``##`` heading, without the blank lines around it. Text that cannot be written so (it
  has such a heading line, starts or ends with a blank line, or starts with a fence) is
  fenced: a line of three or more ``~`` (or backticks), the text exactly, the same line again.
  The Lens fences with more ``~`` than any line of only ``~`` inside, so the text always
  comes back as it was.
- ``## triggers``: the words or phrases that wake the fragment besides its key, one list item
  each, in order, ``- lighthouse``. A trigger with a line break, surrounding spaces or a leading
  ``"`` is written as a JSON string, as a relation is. The list is the fragment's whole set of
  triggers; what ``gem.waking.triggers_problem`` finds wrong with it (a trigger without words,
  two of the same words, too many or too long) is a ``DraftError`` naming the line. Read in
  ``DraftFragment.triggers``; the Lens writes the section for a fragment that has triggers.
- ``## edges``: one list item per edge touching the fragment, ``- → KEY`` for an edge from
  this fragment, ``- ← KEY`` for one to it (``->`` and ``<-`` work too), then ``: relation``
  when it has one. A relation with a line break, surrounding spaces or a leading ``"`` is
  written as a JSON string. The list is the fragment's whole set of edges: one it leaves out
  is removed. Two fragments of one draft must agree about an edge between them, and every
  key an edge names must be in the Gem or in the draft.
- ``## sources``: the events the fragment was compiled from, as list items of ids,
  ``- events 12, 40`` (``- event 12`` too). Applied by adding: each event the fragment does not
  yet record becomes a source (``FragmentSource``); one left out stays, for a source says where
  knowledge came from and nothing a draft says makes that untrue. An id that is not an event of
  the event log, or a line that is not such a list, is a ``DraftError`` naming the line. The
  text is kept as written (``DraftFragment.notes``), the ids read from it in
  ``DraftFragment.sources``.
- ``## working memory``: what the Lens shows of the items naming the fragment; kept in the
  draft (``DraftFragment.notes``), never applied.
- ``## written against``: what the fragment was written against, ``- PART DIGEST`` for each of
  its parts (``PARTS``: the tiers, triggers, edges, sources; ``part_digest``), in
  ``DraftFragment.base``; kept, never applied. ``draft_written`` adds it, ``draft_check``
  compares the draft with it and the Gem now (a three-way ``DraftCheck``), ``draft_rebased``
  writes it against the Gem now;
  ``gem.drafts.draft_apply`` refuses a draft that would overwrite what changed since
  (``DraftConflict``) and applies one part by part (``draft_parts``).
- An absent section leaves that tier (or the triggers, or the edges) unchanged; a present but
  empty one clears it. Anything else (an unknown section, text after a fence, an edge line that
  is not one, an edge two sections disagree about, a NUL character) is a ``DraftError`` naming
  the line.

``draft_parse`` reads it; ``draft_render`` writes the same shape (the Lens prints nothing else
for a fragment), so a fragment's Lens output read back as a draft changes nothing: text that
cannot be written plainly is fenced, relations and triggers that would not survive a line are
written as JSON strings. ``draft_diff`` reads the Gem and writes nothing: its ``DraftDiff`` lists
the fragments created, the tiers changed (key, tier, old, new; ``TierChange.unified()`` is a
unified diff) and the triggers changed among them (a ``TriggersChange``, whose old and new are
the section's lines, so it is shown as a tier's change is), the edges added, removed and
relabelled, the sources added, and ``as_text()`` says it all.
``gem.drafts.draft_apply`` applies a draft.

The Gem imports no other app, so ``draft_diff`` is given the event log's lookup by its caller
(``events.selectors.source_events``): a function from event ids to the ones the log holds.
"""

import difflib
import hashlib
import json
import re
from collections.abc import Callable, Container, Iterable
from dataclasses import dataclass, field, replace

from django.core.exceptions import ValidationError
from django.db.models import Q

from gem.models import (
    KEY_VALIDATOR,
    RELATION_MAX_LENGTH,
    TIERS,
    Fragment,
    FragmentEdge,
    FragmentSource,
)
from gem.waking import triggers_problem

TRIGGERS = "triggers"
EDGES = "edges"
SOURCES = "sources"
NOTES = (SOURCES, "working memory")
BASE = "written against"
SECTIONS = (*TIERS, TRIGGERS, EDGES, *NOTES, BASE)
# What a draft is written against, part by part: what a fragment holds.
PARTS = (*TIERS, TRIGGERS, EDGES, SOURCES)
DIGEST_CHARS = 12
KEY_MAX_LENGTH = Fragment._meta.get_field("key").max_length

HEADING = re.compile(r"^(#{1,2})(?:[ \t]+(.*))?$")
FENCE = re.compile(r"^(~{3,}|`{3,})$")
TRIGGER_ITEM = re.compile(r"^[-*](?:[ \t]+(.*))?$")
EDGE_ITEM = re.compile(r"^[-*][ \t]+(→|->|←|<-)[ \t]*([^\s:]+)(?::(.*))?$")
OUT_ARROWS = ("→", "->")
BASE_ITEM = re.compile(rf"^[-*][ \t]+([a-z]+)[ \t]+([0-9a-f]{{{DIGEST_CHARS}}})$")
SOURCE_ITEM = re.compile(r"^[-*][ \t]+events?[ \t]+(\d+(?:[ \t]*,[ \t]*\d+)*)[ \t]*,?$")
EVENT_ID_MAX = 2**63 - 1  # an event id is a 64-bit integer


class DraftError(ValueError):
    """A draft that cannot be read or applied: what is wrong and on which line (1-based)."""

    def __init__(self, message: str, *, line: int | None = None):
        self.line = line
        super().__init__(f"line {line}: {message}" if line is not None else message)


@dataclass(frozen=True)
class DraftEdge:
    source: str
    target: str
    relation: str = ""
    line: int | None = field(default=None, compare=False)


@dataclass
class DraftFragment:
    """One ``# KEY`` section: only the tiers present are in ``tiers``; ``triggers`` and
    ``edges`` are None when the draft has no such section (unchanged), a list (maybe empty) when
    it has one.
    ``sources`` holds the event ids its sources section lists, each with its line: read from
    ``notes["sources"]``, which is what the draft says (and what compares). ``base`` is what it
    was written against: each part's digest (``part_digest``), empty when the draft does not
    say."""

    key: str
    tiers: dict[str, str] = field(default_factory=dict)
    triggers: list[str] | None = None
    edges: list[DraftEdge] | None = None
    notes: dict[str, str] = field(default_factory=dict)
    base: dict[str, str] = field(default_factory=dict)
    line: int | None = field(default=None, compare=False)
    sources: dict[int, int] = field(default_factory=dict, compare=False, repr=False)


@dataclass
class Draft:
    fragments: list[DraftFragment] = field(default_factory=list)
    preface: str = ""


# --- Reading ----------------------------------------------------------------------------------


def line_breaks_normalized(text: str) -> str:
    """``\\r\\n`` written ``\\n``."""
    return text.replace("\r\n", "\n")


def _lines(text: str) -> list[str]:
    """The draft's lines; ``\\r\\n`` breaks only when every break is one (a Lens draft
    always has bare ``\\n`` breaks, so a ``\\r`` in its text is kept)."""
    if "\r\n" in text and text.count("\r\n") == text.count("\n"):
        text = line_breaks_normalized(text)
    return text.split("\n")


def is_blank(line: str) -> bool:
    return not line.strip()


def _trimmed(lines: list[str]) -> list[str]:
    start, end = 0, len(lines)
    while start < end and is_blank(lines[start]):
        start += 1
    while end > start and is_blank(lines[end - 1]):
        end -= 1
    return lines[start:end]


def draft_parse(text: str) -> Draft:
    """Read a draft; every line lands somewhere or the draft is refused with a DraftError."""
    lines = _lines(text)
    for number, line in enumerate(lines, start=1):
        if "\x00" in line:
            raise DraftError("a NUL character (\\x00) cannot be stored; remove it", line=number)
    draft = Draft()
    index = 0
    preface: list[str] = []
    while index < len(lines) and not HEADING.match(lines[index]):
        preface.append(lines[index])
        index += 1
    draft.preface = "\n".join(_trimmed(preface))
    fragment: DraftFragment | None = None
    seen: set[str] = set()
    while index < len(lines):
        number = index + 1
        level, title = HEADING.match(lines[index]).groups()
        title = (title or "").strip()
        index += 1
        if level == "#":
            fragment = DraftFragment(key=_key(title, line=number), line=number)
            if fragment.key in seen:
                raise DraftError(f"“{fragment.key}” has a second fragment heading", line=number)
            seen.add(fragment.key)
            draft.fragments.append(fragment)
            index = _skip_blank(lines, index, after=f"the heading of “{fragment.key}”")
            continue
        if fragment is None:
            raise DraftError(f"section “{title}” comes before any “# KEY” heading", line=number)
        section = title.lower()
        if section not in SECTIONS:
            raise DraftError(
                f"“## {title}” under “{fragment.key}” is not a section (the sections are "
                f"{', '.join(SECTIONS)}); a heading inside a tier's text needs the text fenced "
                "with ~~~",
                line=number,
            )
        if (
            section in fragment.tiers
            or section in fragment.notes
            or (section == TRIGGERS and fragment.triggers is not None)
            or (section == EDGES and fragment.edges is not None)
            or (section == BASE and fragment.base)
        ):
            raise DraftError(f"“{fragment.key}” has a second “## {section}”", line=number)
        if section == BASE:
            fragment.base, index = _base_read(lines, index)
        elif section in TIERS:
            fragment.tiers[section], index = _tier_body(lines, index)
        elif section == TRIGGERS:
            fragment.triggers, index = _triggers_body(lines, index)
        elif section == EDGES:
            fragment.edges, index = _edges_body(lines, index, key=fragment.key)
        else:
            if section == SOURCES:
                fragment.sources = _sources_read(lines, index)
            body, index = _plain_body(lines, index)
            fragment.notes[section] = "\n".join(body)
    _edges_agree(draft)
    return draft


def _key(title: str, *, line: int) -> str:
    if len(title) > KEY_MAX_LENGTH:
        raise DraftError(f"the key “{title}” is longer than {KEY_MAX_LENGTH} characters", line=line)
    try:
        KEY_VALIDATOR(title)
    except ValidationError as error:
        raise DraftError(f"“{title}” is not a key: {error.messages[0]}", line=line) from None
    return title


def _skip_blank(lines: list[str], index: int, *, after: str) -> int:
    while index < len(lines) and not HEADING.match(lines[index]):
        if not is_blank(lines[index]):
            raise DraftError(
                f"text after {after} belongs to no section: put it under “## ambient”, "
                "“## recognition” or “## inventory”",
                line=index + 1,
            )
        index += 1
    return index


def _plain_body(lines: list[str], index: int) -> tuple[list[str], int]:
    start = index
    while index < len(lines) and not HEADING.match(lines[index]):
        index += 1
    return _trimmed(lines[start:index]), index


def _tier_body(lines: list[str], index: int) -> tuple[str, int]:
    first = index
    while first < len(lines) and is_blank(lines[first]) and not HEADING.match(lines[first]):
        first += 1
    if first == len(lines) or not FENCE.match(lines[first]):
        body, index = _plain_body(lines, index)
        return "\n".join(body), index
    fence = lines[first]
    close = first + 1
    while close < len(lines) and lines[close] != fence:
        close += 1
    if close == len(lines):
        raise DraftError(f"the fence {fence} opened here is never closed", line=first + 1)
    index = _skip_blank(lines, close + 1, after=f"the fence closed at line {close + 1}")
    return "\n".join(lines[first + 1 : close]), index


def _edges_body(lines: list[str], index: int, *, key: str) -> tuple[list[DraftEdge], int]:
    edges: list[DraftEdge] = []
    pairs: set[tuple[str, str]] = set()
    while index < len(lines) and not HEADING.match(lines[index]):
        number, line = index + 1, lines[index].strip()
        index += 1
        if not line:
            continue
        match = EDGE_ITEM.match(line)
        if match is None:
            raise DraftError(
                f"“{line}” is not an edge: write “- → KEY: relation” or “- ← KEY: relation”",
                line=number,
            )
        arrow, other, relation = match.groups()
        other = _key(other, line=number)
        if other == key:
            raise DraftError(f"an edge from “{key}” to itself", line=number)
        source, target = (key, other) if arrow in OUT_ARROWS else (other, key)
        if (source, target) in pairs:
            raise DraftError(f"the edge {source} → {target} is listed twice", line=number)
        pairs.add((source, target))
        edges.append(DraftEdge(source, target, _relation(relation or "", line=number), number))
    return edges, index


def _triggers_body(lines: list[str], index: int) -> tuple[list[str], int]:
    """A triggers section: one list item per trigger, checked as the list grows so a problem
    names the line that brings it."""
    triggers: list[str] = []
    while index < len(lines) and not HEADING.match(lines[index]):
        number, line = index + 1, lines[index].strip()
        index += 1
        if not line:
            continue
        match = TRIGGER_ITEM.match(line)
        if match is None:
            raise DraftError(f"“{line}” is not a trigger: write “- lighthouse”", line=number)
        triggers.append(_quoted(match[1] or "", what="trigger", line=number))
        if "\x00" in triggers[-1]:
            raise DraftError("a NUL character (\\u0000) cannot be stored; remove it", line=number)
        if problem := triggers_problem(triggers):
            raise DraftError(problem, line=number)
    return triggers, index


def _sources_read(lines: list[str], index: int) -> dict[int, int]:
    """The event ids a sources section lists, each with the (first) line naming it."""
    sources: dict[int, int] = {}
    while index < len(lines) and not HEADING.match(lines[index]):
        number, line = index + 1, lines[index].strip()
        index += 1
        if not line:
            continue
        match = SOURCE_ITEM.match(line)
        if match is None:
            raise DraftError(
                f"“{line}” is not a list of events: write “- events 12, 40”", line=number
            )
        for word in match[1].split(","):
            event_id = int(word)
            if event_id > EVENT_ID_MAX:
                raise DraftError(f"{event_id} is too large to be an event id", line=number)
            sources.setdefault(event_id, number)
    return sources


def _base_read(lines: list[str], index: int) -> tuple[dict[str, str], int]:
    """A written-against section: ``- PART DIGEST`` for each part."""
    base: dict[str, str] = {}
    while index < len(lines) and not HEADING.match(lines[index]):
        number, line = index + 1, lines[index].strip()
        index += 1
        if not line:
            continue
        match = BASE_ITEM.match(line)
        if match is None or match[1] not in PARTS:
            raise DraftError(
                f"“{line}” is not what a draft was written against: write “- ambient "
                f"{'0' * DIGEST_CHARS}”, or remove the section to apply the draft unchecked",
                line=number,
            )
        base[match[1]] = match[2]
    return base, index


def _quoted(raw: str, *, what: str, line: int) -> str:
    """A relation or a trigger as written: without the spaces around it, read as a JSON string
    when it starts with ``"``."""
    text = raw.strip()
    if not text.startswith('"'):
        return text
    try:
        text = json.loads(text)
    except json.JSONDecodeError as error:
        raise DraftError(
            f"the {what} {raw.strip()} is not a JSON string: {error}", line=line
        ) from None
    if not isinstance(text, str):
        raise DraftError(f"the {what} {raw.strip()} is not a JSON string", line=line)
    return text


def _relation(raw: str, *, line: int) -> str:
    relation = _quoted(raw, what="relation", line=line)
    if len(relation) > RELATION_MAX_LENGTH:
        raise DraftError(f"a relation is longer than {RELATION_MAX_LENGTH} characters", line=line)
    return relation


def _edges_agree(draft: Draft) -> None:
    """Two fragments' edges sections must say the same about an edge between them."""
    listed = {
        f.key: {(e.source, e.target): e for e in f.edges}
        for f in draft.fragments
        if f.edges is not None
    }
    for key, edges in listed.items():
        for pair, edge in edges.items():
            other = edge.target if edge.source == key else edge.source
            if other not in listed:
                continue
            mirrored = listed[other].get(pair)
            if mirrored is None:
                raise DraftError(
                    f"the edge {edge.source} → {edge.target} is listed under “{key}” but not "
                    f"under “{other}”, whose edges section would remove it",
                    line=edge.line,
                )
            if mirrored.relation != edge.relation:
                raise DraftError(
                    f"the edge {edge.source} → {edge.target} has the relation "
                    f"“{edge.relation}” here and “{mirrored.relation}” under “{other}” "
                    f"(line {mirrored.line})",
                    line=edge.line,
                )


# --- Writing -----------------------------------------------------------------------------------


def draft_render(draft: Draft) -> str:
    """The draft as Markdown: what ``manage.py lens KEY`` prints."""
    parts = [draft.preface] if draft.preface else []
    parts.extend(_fragment_render(fragment) for fragment in draft.fragments)
    return "\n\n".join(parts) + "\n"


def _fragment_render(fragment: DraftFragment) -> str:
    blocks = [f"# {fragment.key}"]
    for tier in TIERS:
        if tier in fragment.tiers:
            blocks.append(f"## {tier}")
            if fragment.tiers[tier]:
                blocks.append(_tier_text(fragment.tiers[tier]))
    if fragment.triggers is not None:
        blocks.append(f"## {TRIGGERS}")
        if fragment.triggers:
            blocks.append(triggers_text(fragment.triggers))
    if fragment.edges is not None:
        blocks.append(f"## {EDGES}")
        if fragment.edges:
            blocks.append("\n".join(_edge_line(fragment.key, edge) for edge in fragment.edges))
    for name in NOTES:
        if name in fragment.notes:
            blocks.append(f"## {name}")
            if fragment.notes[name]:
                blocks.append(fragment.notes[name])
    if fragment.base:
        blocks.append(f"## {BASE}")
        blocks.append(
            "\n".join(f"- {part} {fragment.base[part]}" for part in PARTS if part in fragment.base)
        )
    return "\n\n".join(blocks)


def _tier_text(text: str) -> str:
    lines = text.split("\n")
    plain = (
        not is_blank(lines[0])
        and not is_blank(lines[-1])
        and not lines[0].startswith(("~~~", "```"))
        and not any(HEADING.match(line) for line in lines)
    )
    if plain:
        return text
    longest = max((len(line) for line in lines if line and set(line) == {"~"}), default=0)
    fence = "~" * max(3, longest + 1)
    return f"{fence}\n{text}\n{fence}"


def _as_written(text: str) -> str:
    """A relation or a trigger as a list item holds it: as a JSON string when it would not
    survive the line as it is (a line break, spaces around it, a leading ``"``)."""
    if text != text.strip() or "\n" in text or "\r" in text or text.startswith('"'):
        return json.dumps(text, ensure_ascii=False)
    return text


def _edge_line(key: str, edge: DraftEdge) -> str:
    arrow, other = ("→", edge.target) if edge.source == key else ("←", edge.source)
    if not edge.relation:
        return f"- {arrow} {other}"
    return f"- {arrow} {other}: {_as_written(edge.relation)}"


def triggers_text(triggers: Iterable[str]) -> str:
    """A triggers section's lines: one list item per trigger."""
    return "\n".join(f"- {_as_written(trigger)}" for trigger in triggers)


def edges_ordered(key: str, edges: Iterable[DraftEdge]) -> list[DraftEdge]:
    """Edges from the fragment first, then edges to it, each by the other key."""
    return sorted(edges, key=lambda e: (e.source != key, e.target if e.source == key else e.source))


# --- Comparing with the Gem -------------------------------------------------------------------


@dataclass(frozen=True)
class TierChange:
    key: str
    tier: str
    old: str
    new: str

    def unified(self) -> str:
        return "\n".join(
            difflib.unified_diff(
                self.old.split("\n") if self.old else [],
                self.new.split("\n") if self.new else [],
                fromfile=f"{self.key} · {self.tier} (now)",
                tofile=f"{self.key} · {self.tier} (draft)",
                lineterm="",
            )
        )


@dataclass(frozen=True)
class TriggersChange(TierChange):
    """A fragment's triggers changed: listed with the tiers changed, its old and new the
    triggers section's lines (``triggers_text``), so it is shown as a tier's change is;
    ``triggers`` is the new list, what is written."""

    triggers: tuple[str, ...] = ()


def triggers_change(key: str, old: Iterable[str], new: Iterable[str]) -> TriggersChange:
    new = tuple(new)
    return TriggersChange(key, TRIGGERS, triggers_text(old), triggers_text(new), new)


@dataclass(frozen=True)
class EdgeRelabel:
    source: str
    target: str
    old: str
    new: str


@dataclass(frozen=True)
class SourceAdded:
    """An event a fragment will record as a source (or, in ``sources_removed``, no longer)."""

    key: str
    event_id: int


@dataclass
class DraftDiff:
    """What applying a draft would change."""

    fragments_created: list[str] = field(default_factory=list)
    tiers_changed: list[TierChange] = field(default_factory=list)
    edges_added: list[DraftEdge] = field(default_factory=list)
    edges_removed: list[DraftEdge] = field(default_factory=list)
    edges_relabelled: list[EdgeRelabel] = field(default_factory=list)
    sources_added: list[SourceAdded] = field(default_factory=list)
    # A draft never removes a source; the fragment's form in the Anvil does, through the same
    # write (``gem.drafts.diff_write``).
    sources_removed: list[SourceAdded] = field(default_factory=list)
    # Fragments of the Gem the draft did not say it was written against: applied unchecked.
    unchecked: list[str] = field(default_factory=list, compare=False)

    @property
    def is_empty(self) -> bool:
        return not (
            self.fragments_created
            or self.tiers_changed
            or self.edges_added
            or self.edges_removed
            or self.edges_relabelled
            or self.sources_added
            or self.sources_removed
        )

    def fragments_changed(self) -> list[str]:
        """Keys of existing fragments whose tiers, triggers, edges or sources change, in order
        of first mention."""
        created = set(self.fragments_created)
        keys = [change.key for change in self.tiers_changed]
        for edge in (*self.edges_added, *self.edges_removed, *self.edges_relabelled):
            keys += [edge.source, edge.target]
        keys += [source.key for source in (*self.sources_added, *self.sources_removed)]
        return [key for key in dict.fromkeys(keys) if key not in created]

    def sources_of(self, key: str) -> list[int]:
        """The event ids ``key`` will record as sources."""
        return [source.event_id for source in self.sources_added if source.key == key]

    def as_text(self) -> str:
        if self.is_empty:
            return "No change: the Gem already holds this draft.\n"
        out: list[str] = []
        if self.fragments_created:
            out.append("Fragments created: " + ", ".join(self.fragments_created))
        for change in self.tiers_changed:
            out.append(change.unified())
        if self.edges_added:
            out.append("Edges added:\n" + "\n".join(f"+ {_edge_text(e)}" for e in self.edges_added))
        if self.edges_removed:
            out.append(
                "Edges removed:\n" + "\n".join(f"- {_edge_text(e)}" for e in self.edges_removed)
            )
        if self.edges_relabelled:
            out.append(
                "Edges relabelled:\n"
                + "\n".join(
                    f"~ {e.source} → {e.target}: {json.dumps(e.old, ensure_ascii=False)} → "
                    f"{json.dumps(e.new, ensure_ascii=False)}"
                    for e in self.edges_relabelled
                )
            )
        if self.sources_added:
            keys = dict.fromkeys(source.key for source in self.sources_added)
            out.append(
                "Sources added:\n"
                + "\n".join(f"+ {key} ← {_events_text(self.sources_of(key))}" for key in keys)
            )
        return "\n\n".join(out) + "\n"

    __str__ = as_text


def _events_text(event_ids: list[int]) -> str:
    return ("events " if len(event_ids) > 1 else "event ") + ", ".join(map(str, event_ids))


def _edge_text(edge: DraftEdge) -> str:
    return f"{edge.source} → {edge.target}" + (f": {edge.relation}" if edge.relation else "")


# The events of the event log among some ids (``events.selectors.source_events``).
EventsFound = Callable[[Iterable[int]], Container[int]]


def draft_diff(draft: Draft, *, events_found: EventsFound) -> DraftDiff:
    """Compare a draft with the Gem; reads only. Edges to keys that neither the Gem nor the
    draft has, and sources that ``events_found`` does not find in the event log, are a
    DraftError."""
    keys = [fragment.key for fragment in draft.fragments]
    existing = Fragment.objects.in_bulk(keys)
    diff = DraftDiff(fragments_created=[key for key in keys if key not in existing])
    for fragment in draft.fragments:
        current = existing.get(fragment.key)
        for tier, new in fragment.tiers.items():
            old = getattr(current, tier) if current else ""
            if line_breaks_normalized(old) != line_breaks_normalized(new):
                diff.tiers_changed.append(TierChange(fragment.key, tier, old, new))
        if fragment.triggers is not None:
            held = current.triggers if current else []
            if held != fragment.triggers:
                diff.tiers_changed.append(triggers_change(fragment.key, held, fragment.triggers))

    diff.sources_added = _sources_added(draft, known=existing, events_found=events_found)

    with_edges = [fragment for fragment in draft.fragments if fragment.edges is not None]
    if not with_edges:
        return diff
    desired = {(e.source, e.target): e for f in with_edges for e in f.edges}
    named = {key for pair in desired for key in pair} - set(keys)
    known = set(Fragment.objects.filter(key__in=named).values_list("key", flat=True)) | set(keys)
    for edge in desired.values():
        for key in (edge.source, edge.target):
            if key not in known:
                raise DraftError(
                    f"“{key}” is not a fragment: add a “# {key}” section to create it",
                    line=edge.line,
                )
    touched = [fragment.key for fragment in with_edges]
    current_edges = {
        (source, target): relation
        for source, target, relation in FragmentEdge.objects.filter(
            Q(source_id__in=touched) | Q(target_id__in=touched)
        ).values_list("source_id", "target_id", "relation")
    }
    for pair, edge in desired.items():
        if pair not in current_edges:
            diff.edges_added.append(edge)
        elif current_edges[pair] != edge.relation:
            diff.edges_relabelled.append(EdgeRelabel(*pair, current_edges[pair], edge.relation))
    diff.edges_removed = [
        DraftEdge(source, target, relation)
        for (source, target), relation in sorted(current_edges.items())
        if (source, target) not in desired
    ]
    return diff


def _sources_added(
    draft: Draft, *, known: dict[str, Fragment], events_found: EventsFound
) -> list[SourceAdded]:
    """The sources the draft lists that its fragments do not yet record. Each new one must be
    an event of the event log (one query on the events store); the ones already recorded are
    not looked at again, so a fragment's Lens output always reads back as no change."""
    listed = [fragment for fragment in draft.fragments if fragment.sources]
    if not listed:
        return []
    held = set(
        FragmentSource.objects.filter(
            fragment_id__in=[f.key for f in listed if f.key in known]
        ).values_list("fragment_id", "event_id")
    )
    added = [
        (SourceAdded(fragment.key, event_id), line)
        for fragment in listed
        for event_id, line in fragment.sources.items()
        if (fragment.key, event_id) not in held
    ]
    found = events_found(source.event_id for source, _ in added)
    missing: dict[int, list[int]] = {}
    for source, line in added:
        if source.event_id not in found:
            missing.setdefault(line, []).append(source.event_id)
    if missing:
        line = min(missing)
        raise DraftError(
            f"{_events_text(missing[line])} {'are' if len(missing[line]) > 1 else 'is'} not in "
            "the event log: a source must be an event (see the Lens or the events' admin page)",
            line=line,
        )
    return [source for source, _ in added]


# --- What a draft was written against ---------------------------------------------------------


def part_digest(part: str, text: str) -> str:
    """The short digest of one part of a fragment (a tier, its triggers, edges or sources)."""
    return hashlib.sha256(f"{part}\n{text}".encode()).hexdigest()[:DIGEST_CHARS]


def _source_ids(fragment: DraftFragment) -> list[int]:
    if fragment.sources:
        return sorted(fragment.sources)
    text = fragment.notes.get(SOURCES, "")
    return sorted(_sources_read(text.split("\n"), 0)) if text else []


def part_text(fragment: DraftFragment, part: str, *, whole: bool = False) -> str | None:
    """One part of ``fragment`` as text, what its digest is of: None when the fragment does not
    give it (a draft leaving it as it is), unless ``whole`` (the fragment as the Gem held it,
    where what is absent is empty)."""
    if part in TIERS:
        text = fragment.tiers.get(part, "" if whole else None)
        return None if text is None else line_breaks_normalized(text)
    if part == TRIGGERS:
        if fragment.triggers is None and not whole:
            return None
        return triggers_text(fragment.triggers or [])
    if part == EDGES:
        if fragment.edges is None and not whole:
            return None
        edges = edges_ordered(fragment.key, fragment.edges or [])
        return "\n".join(_edge_line(fragment.key, edge) for edge in edges)
    if SOURCES not in fragment.notes and not fragment.sources and not whole:
        return None
    return ", ".join(map(str, _source_ids(fragment)))


def fragment_base(fragment: DraftFragment) -> dict[str, str]:
    """What a draft written from ``fragment`` (as the Gem held it) says it was written
    against: every part's digest."""
    return {part: part_digest(part, part_text(fragment, part, whole=True)) for part in PARTS}


def draft_written(draft: Draft, *, base: Iterable[DraftFragment] | None = None) -> Draft:
    """``draft`` saying what each of its fragments was written against: ``base``, the fragments
    as the Gem held them (a Lens extract, ``fragments_now``), or the draft's own fragments when
    it is what the Gem held (what the Lens writes). A fragment ``base`` lacks was not in the Gem:
    the draft was written against no fragment of that key, every part empty, so one made since
    is a change it would overwrite."""
    held = {f.key: f for f in (draft.fragments if base is None else base)}
    return Draft(
        fragments=[
            replace(f, base=fragment_base(held.get(f.key) or DraftFragment(key=f.key)))
            for f in draft.fragments
        ],
        preface=draft.preface,
    )


def fragments_now(keys: Iterable[str]) -> dict[str, DraftFragment]:
    """The fragments among ``keys`` as the Gem holds them now: tiers, triggers (None when it has
    none, so no empty section is written), edges, sources."""
    found = Fragment.objects.in_bulk(list(keys))
    edges: dict[str, list[DraftEdge]] = {key: [] for key in found}
    for source, target, relation in FragmentEdge.objects.filter(
        Q(source_id__in=found) | Q(target_id__in=found)
    ).values_list("source_id", "target_id", "relation"):
        for key in {source, target} & edges.keys():
            edges[key].append(DraftEdge(source, target, relation))
    sources: dict[str, dict[int, int]] = {key: {} for key in found}
    for key, event_id in FragmentSource.objects.filter(fragment_id__in=found).values_list(
        "fragment_id", "event_id"
    ):
        sources[key][event_id] = 0
    return {
        key: DraftFragment(
            key=key,
            tiers={tier: getattr(fragment, tier) for tier in TIERS},
            triggers=list(fragment.triggers) or None,
            edges=edges_ordered(key, edges[key]),
            sources=sources[key],
        )
        for key, fragment in found.items()
    }


def draft_rebased(text: str) -> str:
    """The draft in ``text`` written against the Gem as it is now (what a person who edited it
    against today's text saves): its fragments' written-against sections say today's parts."""
    draft = draft_parse(text)
    now = fragments_now(f.key for f in draft.fragments)
    return draft_render(draft_written(draft, base=now.values()))


@dataclass(frozen=True)
class PartCheck:
    """One part of a fragment a draft was written against: its text then (when it is known),
    in the draft (None when the draft leaves it as it is) and now."""

    key: str
    part: str
    base: str | None
    draft: str | None
    now: str
    changes: bool  # the draft changes it (base → draft)
    moved: bool  # it changed since the draft was written (base → now)

    @property
    def conflict(self) -> bool:
        """Applying the draft would overwrite what changed meanwhile (sources are only added,
        so they never conflict)."""
        return (
            self.moved
            and self.draft is not None
            and self.part != SOURCES
            and (self.draft != self.now)
        )

    @property
    def applies(self) -> bool:
        """Applying this part alone changes something and overwrites nothing."""
        return self.draft is not None and not self.conflict and self.draft != self.now

    @property
    def name(self) -> str:
        return f"{self.key}:{self.part}"


@dataclass
class DraftCheck:
    """A draft against what it was written against and the Gem now."""

    parts: list[PartCheck] = field(default_factory=list)
    unchecked: list[str] = field(default_factory=list)  # in the Gem, no base said

    @property
    def conflicts(self) -> list[PartCheck]:
        return [part for part in self.parts if part.conflict]

    def moved(self) -> list[str]:
        """Keys of the fragments that changed since the draft was written."""
        return list(dict.fromkeys(part.key for part in self.parts if part.moved))

    def fragments(self) -> list[tuple[str, list[PartCheck]]]:
        """The fragments changed meanwhile, each with its parts the draft or time changed."""
        moved = set(self.moved())
        out: dict[str, list[PartCheck]] = {}
        for part in self.parts:
            if part.key in moved and (part.moved or part.changes):
                out.setdefault(part.key, []).append(part)
        return list(out.items())

    def as_text(self) -> str:
        said = []
        for key, parts in self.fragments():
            conflicting = [part.part for part in parts if part.conflict]
            said.append(
                f"“{key}” changed since this draft was written"
                + (f" (conflicting: {', '.join(conflicting)})" if conflicting else "")
            )
        return (
            "; ".join(said)
            + ". Edit the draft against today's text, or apply it part by part (a part that "
            "conflicts needs the edit)."
        )


class DraftConflict(DraftError):
    """A draft that would overwrite what changed since it was written; ``check`` says what."""

    def __init__(self, check: DraftCheck):
        self.check = check
        super().__init__(check.as_text())


def draft_check(draft: Draft, *, base: str = "") -> DraftCheck:
    """Compare ``draft`` with what it says it was written against and with the Gem now; reads
    only. ``base`` is the text of what it was written against when it is kept beside the draft
    (a Loom call's extract, an import's): a part's text then is the one of ``base``, the draft
    or the Gem whose digest is the one the draft names, or unknown."""
    kept = {f.key: f for f in draft_parse(base).fragments} if base else {}
    now = fragments_now(f.key for f in draft.fragments)
    check = DraftCheck()
    for fragment in draft.fragments:
        current = now.get(fragment.key)
        if not fragment.base:
            if current is not None:
                check.unchecked.append(fragment.key)
            continue
        for part, digest in fragment.base.items():
            text_now = part_text(current, part, whole=True) if current else ""
            text_draft = part_text(fragment, part)
            candidates = [text_draft, text_now]
            if fragment.key in kept:
                candidates.insert(0, part_text(kept[fragment.key], part, whole=True))
            text_base = next(
                (t for t in candidates if t is not None and part_digest(part, t) == digest), None
            )
            check.parts.append(
                PartCheck(
                    key=fragment.key,
                    part=part,
                    base=text_base,
                    draft=text_draft,
                    now=text_now,
                    changes=text_draft is not None and part_digest(part, text_draft) != digest,
                    moved=part_digest(part, text_now) != digest,
                )
            )
    return check


def draft_parts(draft: Draft, names: Container[str]) -> Draft:
    """Only the parts of ``draft`` named ``KEY:PART`` in ``names`` (applying it part by part);
    a fragment none of whose parts is named is left out."""
    fragments = []
    for fragment in draft.fragments:
        chosen = {part for part in PARTS if f"{fragment.key}:{part}" in names}
        if not chosen:
            continue
        fragments.append(
            replace(
                fragment,
                tiers={t: text for t, text in fragment.tiers.items() if t in chosen},
                triggers=fragment.triggers if TRIGGERS in chosen else None,
                edges=fragment.edges if EDGES in chosen else None,
                notes={n: text for n, text in fragment.notes.items() if n in chosen},
                sources=fragment.sources if SOURCES in chosen else {},
            )
        )
    return Draft(fragments=fragments, preface=draft.preface)
