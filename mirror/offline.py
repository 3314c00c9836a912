"""The offline Mirror: answers each pass when neither an API key nor a local model server is set,
so the whole pipeline runs.

Pure and deterministic: no ORM, no I/O, no clock. Extractive, never inventive: it keeps and cuts
lines of the transcript it is given, and everything it writes says it is offline. It reads the
same request the model would (``sections``: ``(title, body)`` pairs, see ``mirror.passes``) and
answers in the same formats, so the output parser and everything after it run unchanged.

What a summary keeps:

- Not the offline companion's replies: every line of an event with a said line that opens the
  way its replies do ("I got your message", "Your message came through empty.", "An image came
  with it;", or "(offline" in the replies written before its label moved out of the text) is
  left out (they only echo the person, and would crowd out what was said).
- The messages that carry the most (a long one sentence by sentence), by signals in their
  words: capitalised words not at the start of a sentence (names, places; never a capitalised
  weekday, month or other word of time), numbers, dates (months, "the 14th", "5pm", noon),
  first-person news ("I got", "we adopted", "I've finished"), "my …", and asking to be
  remembered or reminded. A weekday, the weekend, today, tonight, tomorrow or yesterday adds
  only to a sentence that carries one of those already: "see you Sunday" carries nothing, "I
  see Ana on Sunday" does. At most ``NOTE_LIMIT`` of them, in the order they were said;
  greetings and one-word answers carry nothing and are left out.
- For the shape, the feeling words the person used (scared, tired, annoyed, happy…).

What it suggests, from the person's own lines: what they asked to be remembered as a pin
("can you remember that I hate cilantro?", said by luna → ``pin (luna): I hate cilantro``) and
what they asked to be reminded of as a plan ("remind me to call the physio on friday at 5pm" →
``plan (luna): call the physio on friday at 5pm``; "remind me on friday to call her" →
``plan (luna): call her on friday``), the words kept as they were said, so the due date is read
from them when the plan is promoted. Its subject is who said it (none for a line that names no
identity). When nothing was asked, a first-person habit or promise ("I always water the roses
at dawn") is suggested as a pin. At most ``SUGGESTION_LIMIT``; the run caps them again per chunk.

A merge (L1, L2) reads the notes of its parts (a part with none gives its first sentence) and
keeps the feeling words of their shapes. Of the notes it leaves out those that carry nothing,
then the repeats: a note whose words overlap an earlier one's by ``REPEAT_OVERLAP`` (Jaccard)
and that holds no name, number or date the earlier lacks (``notes_distinct``; the first said
is kept). Of the rest it keeps the ``MERGE_NOTE_LIMIT`` that carry most, in the order they
were said, and its shape says how many were left out and why ("(5 repeated notes and 4 notes
with nothing to keep left out)").
"""

import re

from mirror.route import CLEAN, COMPRESS, MERGE, SUMMARISE, UNNAMED
from silentstar.words import counted

OFFLINE_LABEL = "(offline summary)"
OFFLINE_MODEL = "offline"
NOTE_LIMIT = 8  # notes of a chunk's summary
MERGE_NOTE_LIMIT = 12  # notes of a merge
REPEAT_OVERLAP = 0.7  # the words two notes of a merge share (Jaccard) when one repeats the other
NOTE_WORDS = 40  # a message this long is a note whole; a longer one, sentence by sentence
EXCERPT_WORDS = 20
SUGGESTION_WORDS = 25
SUGGESTION_LIMIT = 2
FEELING_LIMIT = 5

_LINE_RE = re.compile(r"^#(\d+)(?:-(\d+))?\s+([^:()]+?)(?:\s+\((say|do|narrate)\))?:\s?(.*)$")
_SENTENCE_RE = re.compile(r"(?:(?<=[.!?…])|(?<=[.!?…][\"'”’)]))\s+")
# How the offline companion's replies (``heart.offline``) open their first ``say``.
_OFFLINE_REPLY_RE = re.compile(
    r"^(?:\(offline\b|I got your message\b|Your message came through empty\.|An image came with "
    r"it;)"
)
_NOTE_RE = re.compile(r"^[-*•]\s+(?:([^:\s][^:]{0,39}):\s+)?(.*)$")

_WORD_RE = re.compile(r"[^\W_][\w'’-]*")
_FIRST_PERSON_CAPS = frozenset({"i", "i'm", "i’m", "i'll", "i’ll", "i've", "i’ve", "i'd", "i’d"})
_NUMBER_RE = re.compile(r"\d")
# Numbers written out count as numbers: "since I was six", "turns sixty".
_NUMBER_WORDS = frozenset(
    "two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen"
    " sixteen seventeen eighteen nineteen twenty thirty forty fifty sixty seventy eighty ninety"
    " hundred thousand million dozen".split()
)
# "called Pimpernel", "named Ada": a name introduced.
_INTRODUCED_RE = re.compile(r"\b(?:called|named)\s+[A-Z][\w'’-]*")
_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_MONTHS = frozenset(
    "january february march april may june july august september october november december".split()
)
# Words of time that only place something else: alone ("see you Sunday") they carry nothing.
_RELATIVE_WORDS = frozenset(
    {*_WEEKDAYS, *(f"{day}s" for day in _WEEKDAYS)}
    | {"weekend", "weekends", "today", "tonight", "tomorrow", "yesterday"}
)
# Words of time that are a date of their own ("may" only as "May", inside a sentence).
_DATE_WORDS = (_MONTHS - {"may"}) | {"noon", "midnight"}
# Capitalised, these are still words of time, never names.
_TIME_WORDS = (
    _RELATIVE_WORDS
    | _MONTHS
    | {"noon", "midnight", "morning", "afternoon", "evening", "night", "weekday", "weekdays"}
)
_CLOCK_RE = re.compile(r"\b\d{1,2}(?:st|nd|rd|th)\b|\b\d{1,2}(?::\d\d)?\s?[ap]m\b", re.IGNORECASE)
_PLAIN_WORD_RE = re.compile(r"[^\W_]+")
_NEWS_VERBS = (
    "got|get|start|started|begin|began|moved|move|finished|finish|hurt|broke|bought|sold"
    "|visited|adopted|ran|won|lost|met|quit|passed|failed|sent|left|arrived|went|saw|fell"
    "|found|booked|signed|joined|applied|married|emailed|called|told|decided|made|had"
    "|[a-z]*[a-df-z]ed"  # a past tense ("liked", "emailed"), not "need" or "feed"
)
_NEWS_RE = re.compile(
    r"\b(?:i|we|i['’]ve|we['’]ve)\s+(?:just\s+|finally\s+|already\s+|also\s+|actually\s+)?"
    rf"(?:{_NEWS_VERBS})\b",
    re.IGNORECASE,
)
_MY_RE = re.compile(r"\b(?:my|our)\s+[^\W\d_]", re.IGNORECASE)
_ASKED_RE = re.compile(
    r"\b(?:remember|note|keep\s+in\s+mind)\s+that\b|\bremind\s+me\b"
    r"|\bdon['’]t\s+(?:let\s+me\s+)?forget\b",
    re.IGNORECASE,
)
_FEELING_RE = re.compile(
    r"\b(happy|glad|excited|proud|relieved|calm|grateful|lovely|loved|scared|afraid|nervous"
    r"|anxious|worried|tired|exhausted|sad|lonely|annoyed|angry|furious|frustrated|upset"
    r"|stressed|bored|overwhelmed|hopeful|miserable)\b",
    re.IGNORECASE,
)

_REMEMBER_RE = re.compile(
    r"^(?:(?:can|could|would|will)\s+you\s+(?:please\s+)?|please\s+)?"
    r"(?:remember|don['’]t\s+forget|keep\s+in\s+mind|note)\s+that\s+(?P<what>.+)$"
    r"|^(?:(?:can|could|would|will)\s+you\s+(?:please\s+)?)(?:remember|keep\s+in\s+mind)"
    r"\s+(?!when\b|that\s+time\b)(?P<plain>.+)$",
    re.IGNORECASE,
)
_REMIND_RE = re.compile(
    r"^(?:(?:can|could|would|will)\s+you\s+(?:please\s+)?|please\s+)?"
    r"(?:remind\s+me|don['’]t\s+let\s+me\s+forget)\s+(?P<rest>.+)$",
    re.IGNORECASE,
)
_REMIND_TO_RE = re.compile(r"^(?P<when>.*?)\s*\bto\s+(?P<what>.+)$", re.IGNORECASE | re.DOTALL)
_REMIND_ABOUT_RE = re.compile(r"^(?:about|of)\s+(?P<what>.+)$", re.IGNORECASE | re.DOTALL)
_HABIT_RE = re.compile(
    r"^(?=.*\b(?:i|we|my|our)\b).*\b(?:always|never|every|promise|promised)\b", re.IGNORECASE
)
_LEAD_FILLER_RE = re.compile(r"^(?:(?:oh|and|also|so|ok|okay|hey),?\s+)+", re.IGNORECASE)
_TAIL_FILLER_RE = re.compile(r"(?:,|\s)\s?(?:please|thanks|thank you|ok|okay)$", re.IGNORECASE)
_PUNCTUATION = " ,;:.!?…"


def answer(kind: str, sections: list[tuple[str, str]]) -> str:
    """What the offline Mirror answers to a pass of ``kind`` given these sections."""
    bodies = [body for title, body in sections if not _is_context(title)]
    text = bodies[-1] if bodies else ""
    if kind == CLEAN:
        return _clean(text)
    if kind == COMPRESS:
        return _compress(text)
    if kind == SUMMARISE:
        return _summarise(text)
    if kind == MERGE:
        return _merge(text)
    return text


def _is_context(title: str) -> bool:
    return title.lower().startswith(("context", "previous"))


def _cut(text: str, limit: int) -> str:
    words = text.split()
    return " ".join(words[:limit]) + (" …" if len(words) > limit else "")


def _excerpt(text: str) -> str:
    return _cut(_SENTENCE_RE.split(text.strip(), maxsplit=1)[0], EXCERPT_WORDS)


def _clean(text: str) -> str:
    kept: list[str] = []
    for line in text.splitlines():
        line = " ".join(line.split())
        if line and (not kept or kept[-1] != line):
            kept.append(line)
    return "\n".join(kept)


def _compress(text: str) -> str:
    out: list[str] = []
    run: list[re.Match] = []

    def flush() -> None:
        if run:
            first, last = run[0], run[-1]
            span = (
                first[1] if first[1] == (last[2] or last[1]) else f"{first[1]}-{last[2] or last[1]}"
            )
            out.append(f"#{span} {first[3]} (do): {_excerpt(first[5])}")
            run.clear()

    for line in text.splitlines():
        match = _LINE_RE.match(line.strip())
        if match and match[4] in ("do", "narrate"):
            if run and run[-1][3] != match[3]:
                flush()
            run.append(match)
            continue
        flush()
        if line.strip():
            out.append(line.strip())
    flush()
    return "\n".join(out)


def sentences(text: str) -> list[str]:
    """The sentences of ``text``, whitespace tidied."""
    return [" ".join(part.split()) for part in _SENTENCE_RE.split(text.strip()) if part.strip()]


def sentence_score(sentence: str, *, everyday: frozenset[str] = frozenset()) -> int:
    """How much a sentence carries: names, places, numbers, dates and first-person news.

    A weekday, the weekend, today, tonight, tomorrow or yesterday adds only to a sentence that
    carries something else: alone it places nothing. A capitalised word in ``everyday`` (one
    that comes back in many of the notes being chosen: a film's language, the usual cast) is no
    name here; a name introduced ("called Ada") counts twice.
    """
    words = _WORD_RE.findall(sentence)
    if len(words) < 3:
        return 0
    names = [w for w in _names(words) if _bare(w) not in everyday]
    score = 2 * min(len(names), 3)
    score += 2 if _INTRODUCED_RE.search(sentence) else 0
    score += min(sum(1 for w in words if _NUMBER_RE.search(w) or _bare(w) in _NUMBER_WORDS), 2)
    score += 2 if _NEWS_RE.search(sentence) else 0
    score += 1 if _MY_RE.search(sentence) else 0
    score += 3 if _ASKED_RE.search(sentence) else 0
    dates = len(_dates(words)) + len(_CLOCK_RE.findall(sentence))
    relative = sum(1 for w in words if _bare(w) in _RELATIVE_WORDS) if score or dates else 0
    return score + 2 * min(dates + relative, 2)


def _bare(word: str) -> str:
    """The word folded, without a possessive: "Sunday's" → "sunday"."""
    return word.casefold().removesuffix("'s").removesuffix("’s")


def _names(words: list[str]) -> list[str]:
    """Capitalised words not at the start of the sentence, but for "I…" and words of time."""
    return [
        w
        for w in words[1:]
        if w[0].isupper() and w.casefold() not in _FIRST_PERSON_CAPS and _bare(w) not in _TIME_WORDS
    ]


def _dates(words: list[str]) -> list[str]:
    """The months of the sentence and words like noon ("May" only inside a sentence)."""
    return [w for i, w in enumerate(words) if _bare(w) in _DATE_WORDS or (i > 0 and w == "May")]


def note_texts(text: str) -> list[str]:
    """What of one message may be a note: all of it when short, else each sentence."""
    text = " ".join(text.split())
    return [text] if len(text.split()) <= NOTE_WORDS else sentences(text)


def note_score(text: str, *, everyday: frozenset[str] = frozenset()) -> int:
    """How much a note carries: the scores of its sentences added up."""
    return sum(sentence_score(sentence, everyday=everyday) for sentence in sentences(text))


EVERYDAY_NOTES = 3  # a capitalised word in this many of the notes being chosen is no name


def everyday_words(texts: list[str]) -> frozenset[str]:
    """The capitalised words that come back in ``EVERYDAY_NOTES`` or more of ``texts``."""
    counts: dict[str, int] = {}
    for text in texts:
        found = {_bare(w) for s in sentences(text) for w in _names(_WORD_RE.findall(s))}
        for word in found:
            counts[word] = counts.get(word, 0) + 1
    return frozenset(word for word, count in counts.items() if count >= EVERYDAY_NOTES)


def notes_chosen(
    candidates: list[tuple[str, str]], *, limit: int, everyday: frozenset[str] | None = None
) -> list[tuple[str, str]]:
    """``(who, text)`` pairs worth a note: the ``limit`` that carry most, in the order given.

    ``everyday`` defaults to the ``everyday_words`` of the candidates."""
    if everyday is None:
        everyday = everyday_words([text for _, text in candidates])
    scored = [
        (note_score(text, everyday=everyday), -i, who, text)
        for i, (who, text) in enumerate(candidates)
    ]
    best = sorted((entry for entry in scored if entry[0] > 0), reverse=True)[:limit]
    return [(who, text) for _, _, who, text in sorted(best, key=lambda entry: -entry[1])]


def note_words(text: str) -> frozenset[str]:
    """The words of a note as compared for repeats: case and punctuation ignored."""
    return frozenset(_PLAIN_WORD_RE.findall(text.casefold()))


def notes_distinct(candidates: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """``(who, text)`` pairs without repeats, the first of each kept, in the order given.

    A note repeats an earlier one when they share at least ``REPEAT_OVERLAP`` of their words
    (Jaccard over ``note_words``) and it holds no name, number or date the earlier one lacks:
    "the rent went up to 900 a month" and "the rent went up to 950 a month" are two notes, and
    a dozen words said again with another weekday are one.
    """
    kept: list[tuple[str, str, frozenset[str]]] = []
    for who, text in candidates:
        words, facts = note_words(text), _fact_words(text)
        if not any(_repeats(words, facts, earlier) for _, _, earlier in kept):
            kept.append((who, text, words))
    return [(who, text) for who, text, _ in kept]


def _repeats(words: frozenset[str], facts: frozenset[str], earlier: frozenset[str]) -> bool:
    if not facts <= earlier:
        return False
    union = words | earlier
    return not union or len(words & earlier) / len(union) >= REPEAT_OVERLAP


def _fact_words(text: str) -> frozenset[str]:
    """The names, numbers and dates of a text, as ``note_words`` spells them."""
    facts: list[str] = []
    for sentence in sentences(text):
        words = _WORD_RE.findall(sentence)
        facts += _names(words) + _dates(words) + [w for w in words if _NUMBER_RE.search(w)]
    return note_words(" ".join(facts))


def feelings_named(text: str) -> list[str]:
    """The feeling words in ``text``, first use first, once each."""
    found = (match[1].casefold() for match in _FEELING_RE.finditer(text))
    return list(dict.fromkeys(found))[:FEELING_LIMIT]


def suggestions_from(said: list[tuple[str, str]]) -> list[tuple[str, str, str]]:
    """``(type, who, text)`` from ``(who, text)`` lines: the pins and plans a person asked for,
    else a habit of theirs as a pin, each with who said it."""
    asked: list[tuple[str, str, str]] = []
    habits: list[tuple[str, str, str]] = []
    for who, line in said:
        for sentence in sentences(line):
            sentence = _LEAD_FILLER_RE.sub("", sentence)
            if match := _REMIND_RE.match(sentence):
                plan = _plan_words(match["rest"])
                if plan:
                    asked.append(("plan", who, plan))
            elif match := _REMEMBER_RE.match(sentence):
                pin = _tidy(match["what"] or match["plain"])
                if pin:
                    asked.append(("pin", who, pin))
            elif _HABIT_RE.match(sentence):
                habits.append(("pin", who, _tidy(sentence)))
    return list(dict.fromkeys(asked or habits))[:SUGGESTION_LIMIT]


def _suggestion_line(kind: str, who: str, text: str) -> str:
    """``- pin (luna): I hate cilantro``: its subject is who said it (none when unnamed)."""
    return f"- {kind}: {text}" if who in ("", UNNAMED) else f"- {kind} ({who}): {text}"


def _plan_words(rest: str) -> str:
    if match := _REMIND_ABOUT_RE.match(rest):
        return _tidy(match["what"])
    if match := _REMIND_TO_RE.match(rest):
        what, when = _tidy(match["what"]), _tidy(match["when"])
        return _tidy(f"{what} {when}" if when else what)
    return _tidy(rest)


def _tidy(text: str) -> str:
    text = " ".join(text.split()).rstrip(_PUNCTUATION)
    text = _TAIL_FILLER_RE.sub("", text).rstrip(_PUNCTUATION)
    return _cut(text, SUGGESTION_WORDS)


def _summarise(text: str) -> str:
    lines = [m for line in text.splitlines() if (m := _LINE_RE.match(line.strip()))]
    if not lines:
        return f"## Shape\n{OFFLINE_LABEL} Nothing was shown in this stretch."
    offline = {m[1] for m in lines if m[4] == "say" and _OFFLINE_REPLY_RE.match(m[5])}
    kept = [m for m in lines if m[1] not in offline]
    left_out = f" ({len(offline)} offline replies left out)" if offline else ""
    if not kept:
        return f"## Shape\n{OFFLINE_LABEL} Only offline replies were shown in this stretch."
    speakers = list(dict.fromkeys(m[3] for m in kept))
    said = [m for m in kept if m[4] in (None, "say")] or kept
    shape = f"{OFFLINE_LABEL} {len(kept)} lines from {', '.join(speakers)}{left_out}."
    person = [(m[3], m[5]) for m in kept if m[4] is None]
    felt = [text for _, text in person] or [m[5] for m in said]
    if feelings := feelings_named(" ".join(felt)):
        shape += f" Feelings named: {', '.join(feelings)}."
    candidates = [(m[3], text) for m in said for text in note_texts(m[5])]
    chosen = notes_chosen(candidates, limit=NOTE_LIMIT)
    notes = [f"- {who}: {_cut(text, NOTE_WORDS)}" for who, text in chosen]
    suggested = [_suggestion_line(*suggestion) for suggestion in suggestions_from(person)]
    suggested = suggested or ["- none"]
    return "\n".join(["## Shape", shape, "## Notes", *notes, "## Suggestions", *suggested])


def _merge(text: str) -> str:
    entries = [part.strip() for part in re.split(r"^### .*$", text, flags=re.MULTILINE)]
    entries = [entry for entry in entries if entry]
    candidates: list[tuple[str, str]] = []
    for entry in entries:
        notes = [m for line in entry.splitlines() if (m := _NOTE_RE.match(line.strip()))]
        if notes:
            candidates += [(m[1] or "", text) for m in notes for text in note_texts(m[2])]
        else:
            candidates.append(("", _excerpt(entry.replace(OFFLINE_LABEL, ""))))
    telling = [(who, text) for who, text in candidates if note_score(text) > 0]
    distinct = notes_distinct(telling)
    everyday = everyday_words([text for _, text in candidates])  # repeats count here
    chosen = notes_chosen(distinct, limit=MERGE_NOTE_LIMIT, everyday=everyday)
    left_out = _counted(
        (len(telling) - len(distinct), "repeated note", "repeated notes"),
        (len(candidates) - len(telling), "note with nothing to keep", "notes with nothing to keep"),
        (len(distinct) - len(chosen), "note over the limit", "notes over the limit"),
    )
    shape = f"{OFFLINE_LABEL} {len(entries)} summaries merged"
    shape += f" ({left_out} left out)." if left_out else "."
    if feelings := feelings_named(text):
        shape += f" Feelings named: {', '.join(feelings)}."
    notes = [f"- {who}: {text}" if who else f"- {text}" for who, text in chosen]
    return "\n".join(["## Shape", shape, "## Notes", *notes])


def _counted(*counts: tuple[int, str, str]) -> str:
    """The counts that are not 0, said: "2 repeated notes and 1 note with nothing to keep"."""
    said = [counted(n, one, many) for n, one, many in counts if n]
    return " and ".join(filter(None, [", ".join(said[:-1]), *said[-1:]]))
