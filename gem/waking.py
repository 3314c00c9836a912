"""Waking: which fragments the person's message names, by their keys and triggers.

Pure: standard library only. A fragment is named when one of its names (its key, or a trigger a
person gave it) stands in the message as whole words, in any case: both are read as words
(runs of letters and digits, case folded in Python with ``str.casefold``, so SQLite and
PostgreSQL agree), and a name is found where its words are words of the message in a row. A
key's hyphens and underscores, and an apostrophe, part words as spaces do: the key
``old-grey`` is named by "Old Grey" and by "old-grey", ``y'lhara`` by "Y'lhara's". Exact words
only, never fuzzy: "biscuits" does not name ``biscuit``.

``names_found`` lists each fragment named once, by its longest name found (in words), the
longest first, then the one named latest in the message first: what the person named last is
what they are talking about.
"""

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import NamedTuple

_WORD = re.compile(r"[^\W_]+")
NAME_WORDS_MAX = 12  # words in a name: a longer trigger is a sentence, not a name


class Named(NamedTuple):
    """A fragment the message names: its key, the name found as written in the message and
    that name's words."""

    key: str
    said: str
    words: int
    at: int  # the word of the message the name ends at


def name_words(text: str) -> tuple[str, ...]:
    """A name or a message as words: case folded, split at everything that is not a letter or
    a digit."""
    return tuple(_WORD.findall(text.casefold()))


def names_index(names: Iterable[tuple[str, Iterable[str]]]) -> dict[tuple[str, ...], list[str]]:
    """Every name's words → the keys of the fragments it names, from ``(key, [key and its
    triggers])`` pairs. A name with no words, or more than ``NAME_WORDS_MAX``, names nothing."""
    index: dict[tuple[str, ...], list[str]] = {}
    for key, phrases in names:
        for phrase in phrases:
            words = name_words(phrase)
            if not 0 < len(words) <= NAME_WORDS_MAX:
                continue
            owners = index.setdefault(words, [])
            if key not in owners:
                owners.append(key)
    return index


def names_found(message: str, index: Mapping[tuple[str, ...], list[str]]) -> list[Named]:
    """The fragments ``message`` names, each once, the longest name first, then the latest."""
    if not index:
        return []
    longest = max(len(words) for words in index)
    # Each word of the message folded as a name's are (folding may split one in two).
    spans, words = [], []
    for match in _WORD.finditer(message):
        for word in name_words(match.group()):
            spans.append(match.span())
            words.append(word)
    best: dict[str, Named] = {}
    for end in range(1, len(words) + 1):
        for size in range(1, min(longest, end) + 1):
            owners = index.get(tuple(words[end - size : end]))
            if not owners:
                continue
            said = message[spans[end - size][0] : spans[end - 1][1]]
            for key in owners:
                found = Named(key, said, size, end)
                known = best.get(key)
                if known is None or (size, end) > (known.words, known.at):
                    best[key] = found
    return sorted(best.values(), key=lambda named: (-named.words, -named.at, named.key))


TRIGGERS_MAX = 50  # triggers of one fragment
TRIGGER_CHARS_MAX = 100


def triggers_problem(triggers: object) -> str | None:
    """What is wrong with a fragment's triggers, in words, or None: they are a list of at most
    ``TRIGGERS_MAX`` texts, each of one to ``NAME_WORDS_MAX`` words and at most
    ``TRIGGER_CHARS_MAX`` characters, no two the same words."""
    if not isinstance(triggers, list) or not all(isinstance(t, str) for t in triggers):
        return "Triggers are a list of words or phrases."
    if len(triggers) > TRIGGERS_MAX:
        return f"A fragment has at most {TRIGGERS_MAX} triggers, not {len(triggers)}."
    seen: dict[tuple[str, ...], str] = {}
    for trigger in triggers:
        words = name_words(trigger)
        if not words:
            return f"The trigger “{trigger}” has no words in it."
        if len(words) > NAME_WORDS_MAX or len(trigger) > TRIGGER_CHARS_MAX:
            return (
                f"The trigger “{trigger[:40]}…” is too long: a trigger is a name or a short "
                f"phrase, at most {NAME_WORDS_MAX} words and {TRIGGER_CHARS_MAX} characters."
            )
        if words in seen:
            return f"The triggers “{seen[words]}” and “{trigger}” are the same words."
        seen[words] = trigger
    return None


def triggers_joined(
    key: str, own: Sequence[str], more: Iterable[str]
) -> tuple[list[str], list[str]]:
    """The triggers of the fragment ``key``: ``own`` then ``more``, none added twice in words nor
    one of its key's words, at most ``TRIGGERS_MAX``; and those of ``more`` past that."""
    joined = list(own)
    seen = {name_words(key), *(name_words(trigger) for trigger in joined)}
    past: list[str] = []
    for trigger in more:
        words = name_words(trigger)
        if words in seen:
            continue
        if len(joined) >= TRIGGERS_MAX:
            past.append(trigger)
            continue
        seen.add(words)
        joined.append(trigger)
    return joined, past
