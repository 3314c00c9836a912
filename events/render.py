"""From an event to what the chat page shows: display segments made of parts. Pure: no ORM, no I/O.

The companion's messages show their parsed display segments (``say``, ``do``, ``narrate``); a
reply with none shows nothing at all (a secret response). The person's messages are shown as
written: every piece of the parse that is not markup, in order. Text in ``do`` and ``narrate``
keeps its kind, knowledge text (a plan or pin the person tagged) is a ``say`` part carrying a
knowledge mark, and everything else (``say`` and plain text) is ``say``. Neighbouring pieces of
the same kind make one segment; whitespace at a segment's ends is trimmed, and a segment with
nothing but whitespace is dropped. Each knowledge element is a part of its own, even beside
another of the same kind (``<pin>a</pin><pin>b</pin>`` is two pins), and a segment's
``text_apart`` keeps their words apart for whoever reads them as text.

Identity names become CSS custom property names through ``identity_slug`` (``y'lhara`` →
``ylhara``, so ``--identity-ylhara``).

Within a line, ``**bold**`` and ``*italic*`` are emphasis: the chat page draws them
(``heart_text.inline_markup``) and a plain reading leaves the marks out (``emphasis_plain``).
"""

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from events.corrected import View
from events.parse import DISPLAY_TAGS, KNOWLEDGE_TAGS, MARKUP, PROCESSING, ParsedMessage, parse

USER, COMPANION = "user", "companion"
OWN_KIND_TAGS = ("do", "narrate")  # the person's text in these keeps its kind; the rest is say
COLOR_RE = re.compile(r"^#[0-9a-fA-F]{6}$")
_SLUG_DROP_RE = re.compile(r"['’]")
_SLUG_OTHER_RE = re.compile(r"[^a-z0-9_-]+")
_CLAUSE_ENDS = ".!?…;:,"
# Bold first; italic may hold a whole bold run but never cross one, so tags always nest.
BOLD_RE = re.compile(r"\*\*(?=[^\s*])([^\n]+?)(?<=[^\s*])\*\*")
ITALIC_RE = re.compile(
    r"(?<!\*)\*(?=[^\s*])((?:[^\n*<]|<strong>[^<\n]*</strong>)+?)(?<=[^\s*])\*(?!\*)"
)


@dataclass(frozen=True, slots=True)
class Part:
    """A run of text inside a segment; ``knowledge`` names its knowledge mark (plan, pin…)."""

    text: str
    knowledge: str = ""


@dataclass(frozen=True, slots=True)
class DisplaySegment:
    kind: str  # say | do | narrate
    parts: tuple[Part, ...]

    @property
    def text(self) -> str:
        return "".join(part.text for part in self.parts)

    @property
    def text_apart(self) -> str:
        """The text read as words, each knowledge part kept apart from what is around it: two
        tags' texts with nothing but whitespace between them are parted by "; " (a space when
        the first ends a clause), and a tag's text that touches a word is parted from it by a
        space, so no two words run together ("tea with honey; walks at dusk"). What readers of
        the words take (the Mirror); the page shows the parts."""
        text, mark = "", ""
        for part in self.parts:
            if not part.text.strip():
                text += part.text
                continue
            if text.strip() and (mark or part.knowledge):
                text = _parted(text, part.text, both_tags=bool(mark and part.knowledge))
            else:
                text += part.text
            mark = part.knowledge
        return text


@dataclass(frozen=True, slots=True)
class Message:
    """One event as the chat page shows it, as its corrections leave it (``events.corrected``):
    an edited one with what it first said, a re-attributed one with who it was from, a
    retracted one with what it said, for its own page only."""

    event_id: int
    side: str  # user | companion
    identity: str  # the actor's name, possibly empty
    identity_slug: str  # empty when the actor is not a known identity
    ts: datetime | None
    segments: tuple[DisplaySegment, ...]
    has_image: bool = False
    # The text an edit starts from: a person's message without its identity tag; what the page
    # shows of a reply (its raw text holds what the page never shows: ``reply_edited``).
    written: str = ""
    edited: bool = False
    was: str = ""  # who it was from, when given to another identity
    retracted: bool = False  # taken back
    aside: bool = False  # a reply set aside for another reply to the same message
    original: tuple[DisplaySegment, ...] = ()  # as first written, when edited or retracted

    @property
    def is_secret(self) -> bool:
        """A companion message that shows nothing."""
        return self.side == COMPANION and not self.segments and not self.retracted


def _parted(before: str, after: str, *, both_tags: bool) -> str:
    body, gap = before.rstrip(), before[len(before.rstrip()) :]
    if both_tags and body[-1] not in _CLAUSE_ENDS and after.lstrip()[:1].isalnum():
        return f"{body}; {after.lstrip()}"
    if not gap and (body[-1].isalnum() or body[-1] in _CLAUSE_ENDS) and after[0].isalnum():
        return f"{body} {after}"
    return before + after


def emphasis_plain(text: str) -> str:
    """``text`` without the marks of its emphasis: ``the **blue** one, *finally*`` reads
    ``the blue one, finally``."""
    return ITALIC_RE.sub(r"\1", BOLD_RE.sub(r"\1", text))


def identity_slug(name: str) -> str:
    """The CSS-safe form of an identity name: lower case, apostrophes removed."""
    slug = _SLUG_DROP_RE.sub("", name.strip().casefold())
    return _SLUG_OTHER_RE.sub("-", slug).strip("-")


def identity_colors(identities: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    """``(slug, colour)`` for each ``(name, colour)`` whose colour is a plain ``#rrggbb``."""
    seen: dict[str, str] = {}
    for name, color in identities:
        slug = identity_slug(name)
        if slug and COLOR_RE.match(color or "") and slug not in seen:
            seen[slug] = color
    return list(seen.items())


def side_of(actor: str, sides: Mapping[str, str], *, is_reply: bool = False) -> str:
    """Which side wrote a message: the actor's identity side; a turn's reply is the companion's."""
    if is_reply:
        return COMPANION
    return COMPANION if sides.get(actor) == COMPANION else USER


def companion_segments(parsed: ParsedMessage) -> tuple[DisplaySegment, ...]:
    return tuple(
        DisplaySegment(kind=segment.kind, parts=(Part(segment.text),))
        for segment in parsed.segments
    )


def user_segments(parsed: ParsedMessage) -> tuple[DisplaySegment, ...]:
    groups: list[tuple[str, list[Part]]] = []
    closed = False  # the knowledge element of the last part has ended: the next one is another
    for span in parsed.spans:
        if span.role == MARKUP and groups:
            mark = groups[-1][1][-1].knowledge
            closed = closed or (bool(mark) and f"</{mark}>" in span.text.casefold())
        if span.role == MARKUP or not span.text:
            continue
        if span.role in OWN_KIND_TAGS:
            kind, mark = span.role, ""
        elif span.role in KNOWLEDGE_TAGS:
            kind, mark = "say", span.role
        else:  # say, processing
            kind, mark = "say", ""
        if groups and groups[-1][0] == kind:
            parts = groups[-1][1]
            if parts[-1].knowledge == mark and not closed:
                parts[-1] = Part(parts[-1].text + span.text, mark)
            else:
                parts.append(Part(span.text, mark))
        else:
            groups.append((kind, [Part(span.text, mark)]))
        closed = False
    segments = []
    for kind, parts in groups:
        trimmed = _trim(parts)
        if trimmed:
            segments.append(DisplaySegment(kind=kind, parts=trimmed))
    return tuple(segments)


def _trim(parts: list[Part]) -> tuple[Part, ...]:
    """Strip whitespace at both ends of a segment; nothing when only whitespace is left."""
    while parts and not parts[0].text.strip():
        parts = parts[1:]
    while parts and not parts[-1].text.strip():
        parts = parts[:-1]
    if not parts:
        return ()
    first, last = parts[0], parts[-1]
    parts = [Part(first.text.lstrip(), first.knowledge), *parts[1:]]
    parts[-1] = Part(parts[-1].text.rstrip(), last.knowledge)
    return tuple(parts)


def message_display(
    *,
    event_id: int,
    content: str,
    actor: str,
    sides: Mapping[str, str],
    ts: datetime | None = None,
    has_image: bool = False,
    is_reply: bool = False,
    view: View | None = None,
) -> Message:
    """What the page shows for one event. ``sides`` maps every identity name to its side;
    ``view``, the event as its corrections leave it, when it has any."""
    if view is not None:
        content, actor = view.content, view.actor
    side = side_of(actor, sides, is_reply=is_reply)
    segments = _segments(content, side, sides)
    corrected = view is not None and view.corrected
    return Message(
        event_id=event_id,
        side=side,
        identity=actor,
        identity_slug=identity_slug(actor) if actor in sides else "",
        ts=ts,
        segments=() if corrected and view.taken_back else segments,
        has_image=has_image,
        written=unwrapped(content, sides)
        if side == USER
        else "\n\n".join(segment.text for segment in segments),
        edited=corrected and view.edited,
        was=view.original_actor if corrected and view.reattributed else "",
        retracted=corrected and view.taken_back,
        aside=corrected and view.aside,
        original=_segments(view.original_content, side, sides)
        if corrected and (view.edited or view.taken_back)
        else (),
    )


def _segments(content: str, side: str, sides: Mapping[str, str]) -> tuple[DisplaySegment, ...]:
    parsed = parse(content, identities=list(sides))
    return companion_segments(parsed) if side == COMPANION else user_segments(parsed)


def reply_edited(content: str, text: str, identities: Iterable[str]) -> str:
    """A reply's raw text with what the page shows of it replaced by ``text``, said: every
    display element (``say``, ``do``, ``narrate``) gives way to one ``<say>`` in the place of
    the first, and all the rest (its thinking, its knowledge tags, its identity) stays as it
    was, so a person edits what they see and nothing of what they do not."""
    parsed = parse(content, identities=list(identities))
    kept: list[str] = []
    placed, open_element, open_knowledge = False, None, None
    for span in parsed.spans:
        if span.role in DISPLAY_TAGS or (span.role == PROCESSING and open_element is not None):
            continue  # the text shown, and the markup stripped inside it: replaced
        if span.role != MARKUP:
            # A display tag left unclosed is processing: made no tag, lest the new one close it.
            unclosed = span.role == PROCESSING and open_knowledge is None
            kept.append(_DISPLAY_TAG_RE.sub(_untagged, span.text) if unclosed else span.text)
            continue
        at = 0
        for tag in _ANY_TAG_RE.finditer(span.text):
            kept.append(span.text[at : tag.start()])
            at = tag.end()
            closing, name = bool(tag[1]), tag[2].casefold()
            if open_element is None and name in DISPLAY_TAGS and not closing:
                open_element = name
                if not placed:
                    kept.append(f"<say>{text}</say>")
                    placed = True
            elif open_element is not None and closing and name == open_element:
                open_element = None
            elif name in KNOWLEDGE_TAGS or (open_element is None and name not in DISPLAY_TAGS):
                kept.append(tag[0])
                if open_element is None and name in KNOWLEDGE_TAGS:
                    open_knowledge = None if closing else name
        kept.append(span.text[at:])
    if not placed:
        kept.append(f"<say>{text}</say>")
    return "".join(kept)


_ANY_TAG_RE = re.compile(r"<(/?)([^<>/\s]+)>")
_DISPLAY_TAG_RE = re.compile(rf"</?(?:{'|'.join(DISPLAY_TAGS)})>", re.IGNORECASE)


def _untagged(tag: re.Match) -> str:
    """``<say>`` as ``< say>``, which the tag language reads as text."""
    return f"< {tag[0][1:]}"


def _untagged(tag: re.Match) -> str:
    """``<say>`` as ``< say>``, which the tag language reads as text."""
    return f"< {tag[0][1:]}"


# What a message said, looked for where it was copied: shorter, as a word in other text it would
# take too much with it.
COPY_MIN_CHARS = 4


def copied_forms(said: Iterable[tuple[str, str]], sides: Mapping[str, str]) -> list[str]:
    """What messages said, each ``(actor, raw text)``, in every form a copy of it may hold (raw,
    and as the page shows it), those of ``COPY_MIN_CHARS`` or more, longest first. A purge
    blanks them, an export for sharing leaves them out (``whole_words``)."""
    texts = set()
    for actor, text in said:
        texts.add(text.strip())
        shown = message_display(event_id=0, content=text, actor=actor, sides=sides).segments
        texts.update(segment.text_apart.strip() for segment in shown)
    return sorted((t for t in texts if len(t) >= COPY_MIN_CHARS), key=len, reverse=True)


def whole_words(texts: Sequence[str]) -> re.Pattern | None:
    """A pattern finding any of ``texts`` as whole words, the first listed first; None for
    none."""
    if not texts:
        return None
    return re.compile("|".join(rf"(?<!\w){re.escape(text)}(?!\w)" for text in texts))


def unwrapped(content: str, identities: Iterable[str]) -> str:
    """A person's message without the identity tag the chat wraps it in (``<luna>…</luna>``),
    as they wrote it; any other text as it is."""
    if match := _WRAPPED_RE.fullmatch(content):
        name, inner = match[1], match[2]
        if name in identities and match[3] == name:
            return inner
    return content


_WRAPPED_RE = re.compile(r"<([^<>/\s]+)>(.*)</([^<>/\s]+)>", re.DOTALL)
