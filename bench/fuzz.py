"""``python -m bench fuzz``: the tag parser and ingest on generated tag soup, at scale.

``tag_soup`` draws messages from the tag language's alphabet: display, knowledge and identity
tags in any case, closing and stray tags, broken tags (``<say``, ``< say>``, ``<say/>``, ``<3``),
lifecycle words and desc subjects, recall and search calls (well-formed and broken), words in
several scripts, emoji and combining marks, NUL and other control characters, lone surrogates,
CRLF, CR and Unicode spaces. A third of the messages are built as well-formed nesting first
(an identity, display elements holding knowledge elements) and then cut at a random point, as a
reply still streaming, read with ``partial=True`` half the time.

Every message goes through ``events.parse.parse``; ``fuzz_run`` counts what escapes it (an
exception raised, or the parser's own failure, which it logs before keeping the whole message
as processing) and the characters it does not account for: the spans must join back into the
input, and the segments, knowledge bodies, processing and consumed markup must hold every
non-whitespace character of the input, no more and no fewer (``tests/events/test_parse.py``'s
invariant). One message in ``ingest_every`` also goes through ingest, as a turn writes it:
``event_record`` then ``working_memory_ingest``, alternately from the person's side and the
companion's, into the stores Django is configured with (the command gives it throwaway ones);
the logged event must read back exactly as written, with the parser's tags. Lone surrogates are
replaced before ingest, as the chat page's request decoding replaces them (no database stores
them).
"""

import logging
import random
import re
import time
from collections import Counter
from collections.abc import Callable
from datetime import timedelta

from django.utils import timezone

from events.models import Event, EventTag
from events.parse import DISPLAY_TAGS, KNOWLEDGE_TAGS, MARKUP, ParsedMessage, parse
from heart.ingest import COMPANION, USER, event_record, working_memory_ingest

IDENTITIES = ("luna", "hasuki", "renki", "y'lhara", "claude")
EXAMPLES_KEPT = 5  # failing inputs kept for the report, per kind of failure
_SURROGATE_RE = re.compile("[\ud800-\udfff]")

_NAMES = (
    DISPLAY_TAGS * 3 + KNOWLEDGE_TAGS * 2 + IDENTITIES + ("y’lhara", "b", "saying", "x-1", "élan")
)
_WORDS = (
    "hello", "she", "said", "the", "rain", "plan", "pin", "say", "recall", "search", "deep",
    "True", "done", "ça", "naïve", "日本語", "мир", "שלום", "مرحبا", "🙂", "👩‍👩‍👧", "e\u0301",
    "’", "'", '"', ":", ",", "(", ")", "=", "/", "<", ">", "&lt;", "\\", "—", "…",
)  # fmt: skip
_SPACES = (" ", " ", " ", "\n", "\r\n", "\r", "\t", "\u00a0", "\u2028", "\u3000", "\x0b", "\x1c")
_ODD = ("\x00", "\x7f", "\ufeff", "\u202e", "\u200b", "\ud800", "\udfff", "\U0010ffff", "\x85")
_LIFECYCLE = (
    "done:", "complete: ", "finished :", "cancel:", "skip:", "drop:", "abandon:", "release:",
    "clear:", "remove:", "DONE:", "Drop :", "subject: ", "the garden:", ":", "done",
)  # fmt: skip
_CALLS = (
    "recall(fairy)", 'recall("the fairy")', "recall('fairy')", "recall(fairy, deep=False)",
    "recall( fairy , deep = true )", "RECALL(Fairy)", 'search("rain tomorrow")', "search(rain)",
    "search( a  b )", "recall(", 'search("unclosed', "recall()", "I recall (vaguely)",
    "recall(a,b)", "search(<say>)", "xrecall(no)", "recall(\n)",
)  # fmt: skip


def _cased(rng: random.Random, name: str) -> str:
    roll = rng.random()
    if roll < 0.8:
        return name
    return name.upper() if roll < 0.9 else name.title()


def _tag(rng: random.Random) -> str:
    name = _cased(rng, rng.choice(_NAMES))
    form = rng.random()
    if form < 0.45:
        return f"<{name}>"
    if form < 0.85:
        return f"</{name}>"
    return rng.choice(
        (
            f"<{name}",
            f"< {name}>",
            f"<{name}/>",
            f"<{name} x>",
            f"</ {name}>",
            f"<{name}>>",
            f"<<{name}>",
            "<3",
            "</>",
            "<>",
            "<",
            ">",
        )
    )


def _piece(rng: random.Random) -> str:
    roll = rng.random()
    if roll < 0.30:
        return _tag(rng)
    if roll < 0.60:
        return rng.choice(_WORDS)
    if roll < 0.80:
        return rng.choice(_SPACES)
    if roll < 0.88:
        return rng.choice(_LIFECYCLE)
    if roll < 0.95:
        return rng.choice(_CALLS)
    return rng.choice(_ODD)


def _soup(rng: random.Random, pieces: int) -> str:
    return "".join(_piece(rng) for _ in range(pieces))


def _nested(rng: random.Random) -> str:
    """A well-formed message: an identity, then display elements holding knowledge elements."""
    parts = []
    if rng.random() < 0.5:
        who = _cased(rng, rng.choice(IDENTITIES))
        parts.append(rng.choice(("", " ", "\n")) + f"<{who}>")
    for _ in range(rng.randint(1, 4)):
        display = rng.choice(DISPLAY_TAGS)
        body = [_soup(rng, rng.randint(0, 4))]
        for _ in range(rng.randint(0, 2)):
            knowledge = rng.choice(KNOWLEDGE_TAGS)
            words = rng.choice(_LIFECYCLE) if rng.random() < 0.3 else ""
            words += _soup(rng, rng.randint(0, 5))
            body.append(f"<{knowledge}>{words}</{knowledge}>{_soup(rng, rng.randint(0, 2))}")
        parts.append(f"<{display}>{''.join(body)}</{display}>{rng.choice(_SPACES)}")
    return "".join(parts)


def tag_soup(rng: random.Random) -> tuple[str, bool]:
    """One generated message and whether to read it as a reply still streaming."""
    if rng.random() < 1 / 3:
        text = _nested(rng)
        if rng.random() < 0.5:
            return text[: rng.randint(0, len(text))], rng.random() < 0.5
        return text, False
    pieces = rng.randint(0, 40) if rng.random() > 0.001 else rng.randint(500, 3000)
    return _soup(rng, pieces), rng.random() < 0.1


def _non_space(text: str) -> Counter:
    return Counter("".join(text.split()))


def unaccounted(text: str, parsed: ParsedMessage) -> int:
    """Characters of ``text`` the parse does not account for (plus any it made up): 0 is right.

    Two views, the larger counted: the spans joined back against the input, and the derived
    fields (which read the markup from the spans) against its non-whitespace characters.
    """
    joined = "".join(span.text for span in parsed.spans)
    in_spans = 0
    if joined != text or parsed.raw != text:
        in_spans = _difference(Counter(text), Counter(joined)) or 1  # reordered: at least one
    markup = "".join(span.text for span in parsed.spans if span.role == MARKUP)
    kept = "".join(
        (
            *(segment.text for segment in parsed.segments),
            *(item.raw for item in parsed.knowledge),
            parsed.processing,
            markup,
        )
    )
    return max(in_spans, _difference(_non_space(text), _non_space(kept)))


def _difference(wanted: Counter, got: Counter) -> int:
    if wanted == got:
        return 0
    return (wanted - got).total() + (got - wanted).total()


class _ParserFailures(logging.Handler):
    """Counts the parser's own failures: ``parse`` logs them and keeps the message whole."""

    def __init__(self) -> None:
        super().__init__(level=logging.ERROR)
        self.count = 0

    def emit(self, record: logging.LogRecord) -> None:
        self.count += 1


def fuzz_run(
    *,
    inputs: int,
    ingest_every: int,
    seed: int,
    progress: Callable[[int], None] = lambda done: None,
) -> dict:
    """Parse ``inputs`` generated messages (ingesting one in ``ingest_every``; 0: none)."""
    rng = random.Random(seed)
    parse_logger = logging.getLogger("events.parse")
    failures = _ParserFailures()
    parse_logger.addHandler(failures)
    propagates, parse_logger.propagate = parse_logger.propagate, False
    found = {"exceptions": [], "unaccounted": [], "ingest_exceptions": [], "ingest_mismatches": []}
    counts = dict.fromkeys(found, 0)
    characters = unaccounted_characters = ingested = 0
    parse_seconds = ingest_seconds = 0.0
    now = timezone.now()

    def note(kind: str, text: str, detail: str = "") -> None:
        counts[kind] += 1
        if len(found[kind]) < EXAMPLES_KEPT:
            found[kind].append({"input": text[:400], "detail": detail[:400]})

    began = time.perf_counter()
    try:
        for n in range(1, inputs + 1):
            text, partial = tag_soup(rng)
            characters += len(text)
            started = time.perf_counter()
            failed_before = failures.count
            try:
                parsed = parse(text, identities=IDENTITIES, partial=partial)
            except Exception as error:
                note("exceptions", text, repr(error))
                continue
            finally:
                parse_seconds += time.perf_counter() - started
            if failures.count != failed_before:
                note("exceptions", text, "the parser failed and kept the message as processing")
            if lost := unaccounted(text, parsed):
                unaccounted_characters += lost
                note("unaccounted", text, f"{lost} characters, partial={partial}")
            if ingest_every and n % ingest_every == 0 and not partial:
                started = time.perf_counter()
                ingested += 1
                _ingest_one(text, parsed, n=ingested, at=now + timedelta(seconds=n), note=note)
                ingest_seconds += time.perf_counter() - started
            if n % 1000 == 0:
                progress(1000)
        progress(inputs % 1000)
    finally:
        parse_logger.removeHandler(failures)
        parse_logger.propagate = propagates
    seconds = time.perf_counter() - began
    return {
        "inputs": inputs,
        "characters": characters,
        "exceptions": counts["exceptions"],
        "unaccounted_inputs": counts["unaccounted"],
        "unaccounted_characters": unaccounted_characters,
        "ingested": ingested,
        "ingest_exceptions": counts["ingest_exceptions"],
        "ingest_mismatches": counts["ingest_mismatches"],
        "seconds": seconds,
        "parse_seconds": parse_seconds,
        "ingest_seconds": ingest_seconds,
        "examples": {kind: examples for kind, examples in found.items() if examples},
    }


def _ingest_one(text: str, parsed: ParsedMessage, *, n: int, at, note) -> None:
    """As a turn logs and ingests a message: the person's side, then the companion's, in turn.

    Lone surrogates are replaced first, as Django's decoding of a request does: no database
    stores them (UTF-8 cannot encode them), and the chat page can never send one.
    """
    if _SURROGATE_RE.search(text):
        text = _SURROGATE_RE.sub("\ufffd", text)
        parsed = parse(text, identities=IDENTITIES)
    side = USER if n % 2 else COMPANION
    actor = parsed.identity or ("luna" if side == USER else "companion")
    try:
        event, _ = event_record(text=text, actor=actor, ts=at, parsed=parsed)
        working_memory_ingest(parsed=parsed, event=event, side=side, turn=n)
    except Exception as error:
        note("ingest_exceptions", text, f"{side}: {error!r}")
        return
    stored = Event.objects.values_list("content", flat=True).get(pk=event.pk)
    tags = set(EventTag.objects.filter(event_id=event.pk).values_list("tag", flat=True))
    if stored != text or tags != set(parsed.tags):
        note("ingest_mismatches", text, f"stored {stored!r:.200}, tags {sorted(tags)}")
