"""The tag language: one pure parser for every message, the user's and the companion's.

No ORM and no I/O: identity names are data in the database, so the caller passes them in.
``parse`` never raises, whatever the input, and never loses text.

Markup
    A tag is ``<name>`` or ``</name>``: a name starts with a letter and goes on with letters,
    digits, ``_``, ``-`` or an apostrophe (``'`` or ``’``, for ``<y'lhara>``), with nothing else
    between the brackets. Names are case-insensitive. ``<say foo>``, ``< say>``, ``<say/>``,
    ``<say`` without ``>`` and ``<3`` are not tags at all, just text.

Display tags (``say``, ``do``, ``narrate``)
    Everything the person sees is inside one. An element runs from its opening tag to the first
    closing tag of the same name; with no such closing tag the opening tag is malformed: it is
    processing text and the text after it is read as if it were not there. Display tags do not
    nest: inside a display element every other tag (another display tag, a stray closing tag, an
    unknown tag, an identity) is markup stripped out to processing, and its text stays in the
    segment, so ``<say>a <do>b</do> c</say>`` shows ``a b c``. A segment that is only whitespace
    is dropped. A message with no segment is a secret response: it shows nothing.

Knowledge tags (``feeling``, ``thought``, ``desc``, ``plan``, ``pin``, ``pattern``, ``secret``)
    Anywhere: at the top level or inside a display element, whose text they leave (the knowledge
    text is never shown). Inside a display element a knowledge element must close before the
    display element does, or its tags are stripped markup and its text stays shown. Inside a
    knowledge element every tag is stripped markup and its text belongs to the item. An item that
    is only whitespace is dropped. ``desc``: ``subject: text`` (subject is what comes before the
    first ``:``, on one line; without it the subject is empty). ``plan``: ``done:``,
    ``complete:``, ``finished:`` resolve, ``cancel:``, ``skip:``, ``drop:``, ``abandon:`` cancel;
    ``pin``: ``drop:``, ``release:``, ``clear:``, ``remove:`` drop. Lifecycle words are
    case-insensitive; the item's text is what follows the colon. Who may create what, word caps
    and supersession are the ingest's business, not the parser's.

Identity
    One per message, in leading position (only whitespace before it): ``<luna>…</luna>`` or a
    bare ``<luna>``, and only for a name among ``identities`` (matched case-insensitively, ``’``
    as ``'``; the name is returned as given). The first top-level closing tag of that name is its
    wrapper's end. Any other identity-shaped tag is an unknown tag.

Processing
    Text outside display elements, and unknown or malformed markup wherever it stands: logged,
    never shown. Recognised tags are removed from it and act as word breaks; whitespace is tidied.

Recall and search
    ``recall(fairy)``, ``recall("fairy")``, ``recall('fairy')``, ``recall(fairy, deep=True)``,
    ``recall(fairy, deep=False)`` and ``search("words")`` or ``search(words)`` are found anywhere
    in the text and left where they stand (they are not tags). The name (in any case) touches
    its ``(``, so prose such as "I recall (vaguely)" is not a call; inside the parentheses
    whitespace is free. Keys are exact: only quotes and surrounding whitespace are stripped.
    Depth defaults to deep. Recalls are de-duplicated by key in order of first mention, deep if
    any mention is deep; searches (whitespace runs made single) by exact query.

Partial text
    ``partial=True`` reads a reply still arriving from a stream: a display or knowledge element
    with no closing tag yet, and nothing around it already closed, runs to the end of the text;
    a tag cut off at the very end (``<sa``) is processing. So the growing segment can be shown
    without half-written markup, and the same function parses the finished reply.

Nothing lost
    ``raw`` is the input untouched, and ``spans`` cut it into consecutive pieces, each with its
    role (a display kind, a knowledge kind, ``processing`` or ``markup``), that join back into
    ``raw`` exactly. Every non-whitespace character lands in exactly one of a segment's text, a
    knowledge item's ``raw`` body, ``processing``, or consumed markup. Should the parser itself
    fail (a bug), the failure is logged and the whole message comes back as processing.
"""

import logging
import re
from bisect import bisect_left
from collections.abc import Iterable
from dataclasses import dataclass
from typing import NamedTuple

from gem.recalled import Recall

logger = logging.getLogger(__name__)

DISPLAY_TAGS = ("say", "do", "narrate")
KNOWLEDGE_TAGS = ("feeling", "thought", "desc", "plan", "pin", "pattern", "secret")
PROCESSING = "processing"
MARKUP = "markup"

RESOLVE, CANCEL, DROP = "resolve", "cancel", "drop"
LIFECYCLE_WORDS = {
    "plan": {
        "done": RESOLVE,
        "complete": RESOLVE,
        "finished": RESOLVE,
        "cancel": CANCEL,
        "skip": CANCEL,
        "drop": CANCEL,
        "abandon": CANCEL,
    },
    "pin": {"drop": DROP, "release": DROP, "clear": DROP, "remove": DROP},
}


@dataclass(frozen=True, slots=True)
class Span:
    """A consecutive piece of the raw text and what it became."""

    role: str  # a display kind, a knowledge kind, PROCESSING or MARKUP
    text: str


@dataclass(frozen=True, slots=True)
class Segment:
    """Display text the person sees."""

    kind: str  # say | do | narrate
    text: str


@dataclass(frozen=True, slots=True)
class KnowledgeItem:
    """The body of one knowledge tag."""

    kind: str  # feeling | thought | desc | plan | pin | pattern | secret
    text: str  # tidied, without the desc subject or the lifecycle word
    raw: str  # the body exactly as written (stripped markup excluded)
    subject: str = ""  # desc only
    lifecycle: str | None = None  # plan: resolve | cancel; pin: drop


@dataclass(frozen=True, slots=True)
class Search:
    query: str


@dataclass(frozen=True, slots=True)
class ParsedMessage:
    raw: str
    identity: str | None = None
    segments: tuple[Segment, ...] = ()
    knowledge: tuple[KnowledgeItem, ...] = ()
    recalls: tuple[Recall, ...] = ()
    searches: tuple[Search, ...] = ()
    processing: str = ""
    tags: frozenset[str] = frozenset()
    spans: tuple[Span, ...] = ()

    @property
    def display_text(self) -> str:
        """What the person sees: the segments, one per line."""
        return "\n".join(segment.text for segment in self.segments)

    @property
    def is_secret(self) -> bool:
        """True when the message shows nothing."""
        return not self.segments


def parse(text: str, *, identities: Iterable[str] = (), partial: bool = False) -> ParsedMessage:
    """Read a tagged message; see the module docstring for the rules. Never raises."""
    raw = _as_text(text)
    try:
        return _parse_strict(raw, identities=identities, partial=partial)
    except Exception:  # a bug here must not cost a turn: keep everything, as processing
        logger.exception("Tag parser failed; the whole message is kept as processing.")
        spans = (Span(PROCESSING, raw),) if raw else ()
        return ParsedMessage(raw=raw, processing=tidy(raw), spans=spans)


# --- internals ---------------------------------------------------------------------------------

_NAME = r"[^\W\d_][\w'’-]*"
_TAG_RE = re.compile(rf"<(/?)({_NAME})>")
_CUT_TAG_RE = re.compile(rf"</?(?:{_NAME})?\Z")
_LIFECYCLE_RE = re.compile(r"([^\W\d_]+)\s*:\s*")
_HSPACE_RE = re.compile(r"[^\S\n]+")
_NEWLINE_RE = re.compile(r" ?\n ?")
_BLANK_LINES_RE = re.compile(r"\n{3,}")
_RECALL_RE = re.compile(
    r"(?<!\w)recall\(\s*"
    r"(?:\"([^\"\n]{0,200}?)\"|'([^\n]{0,200}?)'|([^\s,()\"'<>][^\s,()\"<>]{0,199}))"
    r"\s*(?:,\s*deep\s*=\s*(true|false)\s*)?\)",
    re.IGNORECASE,
)
_SEARCH_RE = re.compile(
    r"(?<!\w)search\(\s*"
    r"(?:\"([^\"\n]{0,200}?)\"|'([^\n]{0,200}?)'|([^\s()\"'<>][^()\"<>\n]{0,199}?))"
    r"\s*\)",
    re.IGNORECASE,
)


class _Token(NamedTuple):
    start: int
    end: int
    name: str | None  # None for text; "" for a tag cut off at the end (partial text)
    closing: bool = False


def _as_text(text: object) -> str:
    if isinstance(text, str):
        return text
    if text is None:
        return ""
    if isinstance(text, bytes | bytearray):
        return bytes(text).decode("utf-8", errors="replace")
    try:
        return str(text)
    except Exception:
        return ""


def _norm(name: str) -> str:
    return name.replace("’", "'").casefold()


def tidy(text: str) -> str:
    """Whitespace runs to one space, at most one blank line, ends stripped."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    text = _HSPACE_RE.sub(" ", text)
    text = _NEWLINE_RE.sub("\n", text)
    return _BLANK_LINES_RE.sub("\n\n", text).strip()


def _tokenize(text: str, *, partial: bool) -> list[_Token]:
    tokens: list[_Token] = []
    position = 0
    for match in _TAG_RE.finditer(text):
        if match.start() > position:
            tokens.append(_Token(position, match.start(), None))
        tokens.append(_Token(match.start(), match.end(), _norm(match[2]), bool(match[1])))
        position = match.end()
    tail = len(text)
    if partial and (cut := _CUT_TAG_RE.search(text, position)):
        tail = cut.start()
    if tail > position:
        tokens.append(_Token(position, tail, None))
    if tail < len(text):
        tokens.append(_Token(tail, len(text), ""))
    return tokens


def _knowledge_item(kind: str, raw: str) -> KnowledgeItem | None:
    text = tidy(raw)
    if not text:
        return None
    subject, lifecycle = "", None
    words = LIFECYCLE_WORDS.get(kind)
    if words and (match := _LIFECYCLE_RE.match(text)) and match[1].casefold() in words:
        lifecycle, text = words[match[1].casefold()], text[match.end() :]
    elif kind == "desc":
        head, colon, rest = text.partition(":")
        if colon and head.strip() and "\n" not in head:
            subject, text = head.strip(), rest.strip()
    return KnowledgeItem(kind=kind, text=text, raw=raw, subject=subject, lifecycle=lifecycle)


def _calls(text: str, pattern: re.Pattern[str]):
    for match in pattern.finditer(text):
        argument = next((group for group in match.groups()[:3] if group is not None), "")
        if argument := argument.strip():
            yield argument, match


def _recalls(text: str) -> tuple[Recall, ...]:
    found: dict[str, bool] = {}
    for key, match in _calls(text, _RECALL_RE):
        deep = match[4] is None or match[4].casefold() == "true"
        found[key] = found.get(key, False) or deep
    return tuple(Recall(key=key, deep=deep) for key, deep in found.items())


def _searches(text: str) -> tuple[Search, ...]:
    queries = dict.fromkeys(" ".join(query.split()) for query, _ in _calls(text, _SEARCH_RE))
    return tuple(Search(query=query) for query in queries)


class _Parser:
    def __init__(self, text: str, identities: Iterable[str], partial: bool):
        self.text = text
        self.partial = partial
        self.tokens = _tokenize(text, partial=partial)
        self.closes: dict[str, list[int]] = {}
        for index, token in enumerate(self.tokens):
            if token.closing:
                self.closes.setdefault(token.name, []).append(index)
        self.identities: dict[str, str] = {}
        for name in identities or ():
            if isinstance(name, str) and _TAG_RE.fullmatch(f"<{name.strip()}>"):
                self.identities.setdefault(_norm(name.strip()), name.strip())
        self.spans: list[tuple[str, list[str]]] = []  # (role, pieces), merged by role
        self.processing: list[str] = []
        self.bodies: list[list[str]] = []  # text of the open display or knowledge elements
        self.segments: list[Segment] = []
        self.knowledge: list[KnowledgeItem] = []
        self.tags: set[str] = set()
        self.identity: str | None = None
        self.identity_close: str | None = None

    def run(self) -> ParsedMessage:
        start = self._leading_identity()
        self._walk(start, len(self.tokens), None)
        return ParsedMessage(
            raw=self.text,
            identity=self.identity,
            segments=tuple(self.segments),
            knowledge=tuple(self.knowledge),
            recalls=_recalls(self.text),
            searches=_searches(self.text),
            processing=tidy("".join(self.processing)),
            tags=frozenset(self.tags),
            spans=tuple(Span(role, "".join(pieces)) for role, pieces in self.spans),
        )

    def _leading_identity(self) -> int:
        index = 0
        if self.tokens and self.tokens[0].name is None and self._text(self.tokens[0]).isspace():
            index = 1
        if index >= len(self.tokens):
            return 0
        token = self.tokens[index]
        name = token.name
        if not name or token.closing or name in DISPLAY_TAGS or name in KNOWLEDGE_TAGS:
            return 0
        if name not in self.identities:
            return 0
        if index:
            self._emit(PROCESSING, self.tokens[0])
        self._emit(MARKUP, token)
        self.identity = self.identities[name]
        self.identity_close = name
        self.tags.add(self.identity)
        return index + 1

    def _walk(self, index: int, end: int, inside: str | None) -> None:
        """Read tokens[index:end] inside a display or knowledge element (or at the top)."""
        while index < end:
            token = self.tokens[index]
            name = token.name
            if name is None:
                self._emit(inside or PROCESSING, token)
                index += 1
                continue
            if inside is None and token.closing and name == self.identity_close:
                self._emit(MARKUP, token)
                self.identity_close = None
                index += 1
                continue
            opens_element = not token.closing and (
                (name in DISPLAY_TAGS and inside is None)
                or (name in KNOWLEDGE_TAGS and (inside is None or inside in DISPLAY_TAGS))
            )
            if opens_element:
                close = self._find_close(name, index + 1, end)
                if close is not None or (self.partial and end == len(self.tokens)):
                    self._element(name, index, close, end)
                    index = end if close is None else close + 1
                    continue
            self._emit(PROCESSING, token)
            index += 1

    def _element(self, name: str, index: int, close: int | None, end: int) -> None:
        self._emit(MARKUP, self.tokens[index])
        self.bodies.append([])
        self._walk(index + 1, end if close is None else close, name)
        body = "".join(self.bodies.pop())
        if close is not None:
            self._emit(MARKUP, self.tokens[close])
        self.tags.add(name)
        if name in DISPLAY_TAGS:
            if text := tidy(body):
                self.segments.append(Segment(kind=name, text=text))
        elif item := _knowledge_item(name, body):
            self.knowledge.append(item)

    def _find_close(self, name: str, start: int, end: int) -> int | None:
        closes = self.closes.get(name, [])
        position = bisect_left(closes, start)
        if position < len(closes) and closes[position] < end:
            return closes[position]
        return None

    def _text(self, token: _Token) -> str:
        return self.text[token.start : token.end]

    def _emit(self, role: str, token: _Token) -> None:
        text = self._text(token)
        if self.spans and self.spans[-1][0] == role:
            self.spans[-1][1].append(text)
        else:
            self.spans.append((role, [text]))
        if role == PROCESSING:
            self.processing.append(text)
        else:
            self.processing.append(" ")  # a recognised tag or hidden text breaks words
            if role != MARKUP:
                self.bodies[-1].append(text)


def _parse_strict(text: str, *, identities: Iterable[str], partial: bool) -> ParsedMessage:
    return _Parser(text, identities, partial).run()
