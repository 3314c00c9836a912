"""Lorebook entries as fragments, and fragments as lorebook entries (docs/bridges.md).

Pure: plain data in and out, no Django.

An entry from elsewhere becomes a fragment like this:
- its key is its first key (a word, not a regular expression), else a card entry's name or a
  Letta block's label, else its comment, written as one word of the Gem's keys ("Old Harbour"
  → ``old-harbour``); two entries of one key are told apart by a number (``old-harbour-2``).
  The comment is a person's note about the entry, said in the draft's preface;
- its keys are the fragment's triggers, the names that wake it when the person says them; its
  secondary keys are not (SillyTavern reads them only beside a key, often to keep an entry
  out), and stay on the proposal as the file had them;
- an entry is recognition when it is a single short paragraph, else its first paragraph is
  the recognition and the whole content the inventory (recall reads the inventory first, the
  recognition when asked for less); a constant entry, always in SillyTavern's context, is also
  ambient by that recognition, and is named in a proposed addition to the ambient prose;
- a disabled entry is left out: a fragment has no off switch here, and its keys would wake it;
- an entry whose key is an existing fragment's in any case, or a near duplicate of one (its
  key begins with the words of that fragment's key and it answers to that key: "Biscuit the
  cat" keyed also "biscuit", beside ``biscuit``), folds into that fragment: its tiers are
  added after the fragment's, its keys to the fragment's triggers;
- an entry whose content names another entry's key (a whole word, any case) proposes an edge
  from it to that other fragment, "names".

An entry exported from here carries its fragment (``LoreEntry.fragment``: key, the tiers it
holds, its edges out, its triggers), and is read back as that fragment exactly. Its keys are the
fragment's key and triggers, the names that wake it here, then the keys of the ``Keys:`` line an
older import ended the recognition tier with.
"""

import heapq
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import groupby, islice

import ahocorasick

from gem.waking import TRIGGERS_MAX, name_words, triggers_joined, triggers_problem
from transfer.bundle import LoreEntry

KEY_MAX = 100  # gem.models.Fragment.key
KEY_PATTERN = re.compile(r"[\w][\w'-]*")  # gem.models.KEY_VALIDATOR
RECOGNITION_CHARS = 600  # a single paragraph up to this is recognition alone
KEYS_PREFIX = "Keys: "  # the line that ended an imported recognition tier before triggers
NAMES = "names"  # the relation of an edge proposed because one entry names another
MENTION_MIN_CHARS = 3  # shorter keys ("a", "it") name nothing
MENTIONS_MAX = 50  # the entries one entry may name: the first in the file's order
TIERS = ("ambient", "recognition", "inventory")
# What an exported entry carries of its fragment (one exported before triggers has none).
MARK_FIELDS = {"key", *TIERS, "edges", "triggers"}
_WORD = re.compile(r"[\w']+")
_PARAGRAPH_BREAK = re.compile(r"\n[ \t]*\n")
_TOKEN = re.compile(r"(\w+)|(\W)")
TOKEN_EDGE = "\x00"
# A key SillyTavern reads as a regular expression: ``/pattern/flags``.
REGEX_KEY = re.compile(r"^/(.+)/([a-z]*)$", re.S)

Words = tuple[str, ...]


@dataclass
class LoreFragment:
    """What a draft says of one fragment: the tiers it sets (absent ones stay as they are) and
    the edges it proposes, from it (``target``, ``relation``)."""

    key: str
    tiers: dict[str, str] = field(default_factory=dict)
    edges: list[tuple[str, str]] = field(default_factory=list)
    entries: list[str] = field(default_factory=list)  # where in the file it came from
    triggers: list[str] = field(default_factory=list)  # the names that wake it: its keys
    fold: bool = False  # into the existing fragment of its key: tiers added after its own
    constant: bool = False  # always in context there: named in the ambient prose proposed
    notes: list[str] = field(default_factory=list)  # said of it in the draft's preface


def key_of(title: str) -> str:
    """A title as one key word: lower case, words joined by hyphens; empty when no word."""
    words = _WORD.findall(title.casefold())
    key = "-".join(word.strip("'") for word in words if word.strip("'"))
    return key[:KEY_MAX].rstrip("-")


def fragments_of(
    entries: Sequence[LoreEntry],
    *,
    names: dict[str, str] | None = None,
    existing: Mapping[Words, str] | None = None,
) -> list[LoreFragment]:
    """The fragments a lorebook's entries propose, in the file's order.

    ``names``: what the macros of SillyTavern stand for (``{"char": "Seraphina", "user":
    "luna"}``), replaced in the contents and keys of entries from elsewhere. ``existing``: the
    Gem's keys by their words (``keys_indexed``), which entries fold into.
    """
    names, existing = names or {}, existing or {}
    by_key: dict[str, LoreFragment] = {}
    keys_of_entry: list[tuple[str, LoreEntry]] = []
    numbers: dict[str, int] = {}
    for entry in entries:
        if not entry.enabled:
            continue
        marked = _marked(entry)
        if marked is not None:
            fragment = by_key.setdefault(marked["key"], LoreFragment(marked["key"]))
            fragment.tiers.update({tier: marked[tier] for tier in TIERS if tier in marked})
            fragment.edges += [tuple(edge) for edge in marked.get("edges", [])]
            if "triggers" in marked:
                fragment.triggers = list(marked["triggers"])
            fragment.entries.append(entry.where)
            continue
        title = _title(entry)
        keys, notes = _keys(entry, names)
        words = name_words(key_of(title))
        into, near = _fold_target(words, keys, existing)
        if into is None:
            key = _key_free(title, taken=by_key, numbers=numbers, existing=existing)
            fragment = by_key[key] = LoreFragment(key, constant=entry.constant)
        else:
            key = into
            fragment = by_key.setdefault(key, LoreFragment(key, fold=True))
            fragment.constant = fragment.constant or entry.constant
            said = f"“{macros_replaced(title, names).strip()}”"
            notes.append(
                f"folded into the existing “{key}”: "
                + (f"{said} begins with its name and answers to it" if near else f"{said} is it")
            )
        if entry.note:
            notes.insert(0, f"its comment: “{entry.note}”")
        fragment.entries.append(entry.where)
        fragment.notes += [f"{entry.where}: {note}" for note in notes]
        fragment.triggers, beyond = triggers_said(fragment.key, fragment.triggers, keys)
        fragment.notes += [beyond] if beyond else []
        for tier, text in _tiers(entry, names=names).items():
            before = fragment.tiers.get(tier, "")
            fragment.tiers[tier] = f"{before}\n\n{text}" if before else text
        keys_of_entry.append((key, entry))
    _mentions_proposed(keys_of_entry, by_key)
    for fragment in by_key.values():
        fragment.edges = list(dict.fromkeys(fragment.edges))
    return list(by_key.values())


def keys_indexed(keys: Iterable[str]) -> dict[Words, str]:
    """The Gem's keys by their words (``gem.waking.name_words``: case folded, split at what is
    not a letter or digit), the first of each words in the order given: what an entry of the
    same words, in any case, folds into."""
    index: dict[Words, str] = {}
    for key in keys:
        index.setdefault(name_words(key), key)
    return index


def entries_left_out(entries: Iterable[LoreEntry]) -> list[LoreEntry]:
    """The entries that make no fragment: the disabled ones (a fragment has no off switch, and
    a key named in the chat would wake it)."""
    return [entry for entry in entries if not entry.enabled]


def _fold_target(words: Words, keys: list[str], existing: Mapping[Words, str]):
    """The existing fragment an entry of key ``words`` and triggers ``keys`` folds into, and
    whether as a near duplicate; ``(None, False)`` when none. Its key's words are an existing
    key's; or (a near duplicate) an existing key's words begin its key's words, and one of its
    keys is that existing key's words: the longest such. Looked up by words, never compared
    pair by pair."""
    if not words:
        return None, False
    if words in existing:
        return existing[words], False
    best: Words = ()
    for trigger in keys:
        said = name_words(trigger)
        if len(best) < len(said) < len(words) and words[: len(said)] == said and said in existing:
            best = said
    return (existing[best], True) if best else (None, False)


def _keys(entry: LoreEntry, names: dict[str, str]) -> tuple[list[str], list[str]]:
    """The entry's keys that can be triggers, macros replaced, and what is said of the others:
    a regular expression is not a word to find, and a trigger too long is a sentence."""
    keys, notes = [], []
    for raw in dict.fromkeys(entry.keys):
        key = macros_replaced(raw, names).strip()
        if not key:
            continue
        if REGEX_KEY.match(key):
            notes.append(f"the key “{key}” is a regular expression, not a trigger here")
        elif problem := triggers_problem([key]):
            notes.append(problem)
        else:
            keys.append(key)
    return keys, notes


def triggers_said(key: str, own: Sequence[str], keys: Iterable[str]) -> tuple[list[str], str]:
    """``gem.waking.triggers_joined``, and what the preface says of the keys past the most a
    fragment has ("" when none are)."""
    joined, past = triggers_joined(key, own, keys)
    if not past:
        return joined, ""
    return joined, (
        f"“{past[0]}” and the keys after it are not triggers: a fragment has at most {TRIGGERS_MAX}"
    )


def _marked(entry: LoreEntry) -> dict | None:
    """The fragment an entry exported from here carries, if it is whole."""
    marked = entry.fragment
    if not isinstance(marked, dict) or not isinstance(marked.get("key"), str):
        return None
    if not set(marked) <= MARK_FIELDS or not set(marked) & set(TIERS):
        return None
    if not KEY_PATTERN.fullmatch(marked["key"]) or len(marked["key"]) > KEY_MAX:
        return None
    if not all(isinstance(marked.get(tier, ""), str) for tier in TIERS):
        return None
    edges = marked.get("edges", [])
    if not isinstance(edges, list) or not all(
        isinstance(edge, list) and len(edge) == 2 and all(isinstance(part, str) for part in edge)
        for edge in edges
    ):
        return None
    if triggers_problem(marked.get("triggers", [])):
        return None
    return marked


def _title(entry: LoreEntry) -> str:
    """What names the entry: its first key that is a word, else its name (a card entry's, a
    block's label), else its comment."""
    keys = (key for key in entry.keys if not REGEX_KEY.match(key.strip()))
    for title in (*keys, entry.name, entry.note):
        if key_of(title):
            return title
    return f"entry {entry.where}"


def _key_free(
    title: str, *, taken: dict, numbers: dict[str, int], existing: Mapping[Words, str]
) -> str:
    """The title's key, or the first numbered one not ``taken`` and not an existing fragment's.
    ``numbers``: the number to try first for each key (keys are only ever added to ``taken``,
    so the ones before it still are taken), so a thousand entries of one title do not each
    count up from 2."""
    key = base = key_of(title)
    number = numbers.get(base, 2)
    while key in taken or name_words(key) in existing:
        suffix = f"-{number}"
        key = base[: KEY_MAX - len(suffix)] + suffix
        number += 1
    numbers[base] = number
    return key


def macros_replaced(text: str, names: dict[str, str]) -> str:
    """SillyTavern's ``{{char}}`` and ``{{user}}`` (any case) as the names they stand for."""
    for macro, name in names.items():
        text = re.sub(r"\{\{\s*" + re.escape(macro) + r"\s*\}\}", name, text, flags=re.I)
    return text


def _tiers(entry: LoreEntry, *, names: dict[str, str]) -> dict[str, str]:
    content = macros_replaced(entry.content.strip(), names)
    paragraphs = [part.strip() for part in _PARAGRAPH_BREAK.split(content) if part.strip()]
    if len(paragraphs) <= 1 and len(content) <= RECOGNITION_CHARS:
        recognition, inventory = content, ""
    else:
        recognition, inventory = paragraphs[0], content
    tiers = {"recognition": recognition}
    if entry.constant and recognition:
        tiers["ambient"] = recognition
    if inventory:
        tiers["inventory"] = inventory
    return tiers


def _mentions_proposed(
    keys_of_entry: list[tuple[str, LoreEntry]], by_key: dict[str, LoreFragment]
) -> None:
    """An edge from each entry to every other entry whose name or key its content names (a whole
    word, any case), to the first ``MENTIONS_MAX`` of them in the file's order.

    The names of every entry are one Aho-Corasick automaton (pyahocorasick) over their tokens,
    and each content is read through it once: the time grows with the file, not with entries
    times entries."""
    automaton = ahocorasick.Automaton()
    for number, (_, entry) in enumerate(keys_of_entry):
        for word in dict.fromkeys(word.strip() for word in (entry.name, *entry.keys)):
            if len(word) >= MENTION_MIN_CHARS:
                phrase = _joined(_tokens(word))
                owners = automaton.get(phrase, None)
                if owners is None:
                    automaton.add_word(phrase, owners := [])
                if not owners or owners[-1] != number:
                    owners.append(number)  # ascending: entries are added in order
    if not len(automaton):
        return
    automaton.make_automaton()
    for key, entry in keys_of_entry:
        found = {
            id(owners): owners for _, owners in automaton.iter(_joined(_tokens(entry.content)))
        }
        merged = (other for other, _ in groupby(heapq.merge(*found.values())))
        # Not itself, nor another entry folded into the same fragment.
        named = (other for other in merged if keys_of_entry[other][0] != key)
        by_key[key].edges += [
            (keys_of_entry[other][0], NAMES) for other in islice(named, MENTIONS_MAX)
        ]


def _tokens(text: str) -> list[str]:
    """``text`` as the index of names reads it: each run of word characters in lower case, and
    each other character marked with whether a word character touches it before and after.

    A name is found where its tokens are tokens of the text in a row: its words are then whole
    words of the text, and a name that begins (or ends) with a mark, like "(Tower)", is found
    only where no word character comes before (or after) it, as a regular expression's
    ``(?<!\\w)`` and ``(?!\\w)`` would find it."""
    runs = _TOKEN.findall(text.lower())
    last = len(runs) - 1
    tokens = []
    for at, (word, mark) in enumerate(runs):
        if word:
            tokens.append(word)
        else:
            before = "w" if at and runs[at - 1][0] else " "
            after = "w" if at < last and runs[at + 1][0] else " "
            tokens.append(before + mark + after)
    return tokens


def _joined(tokens: list[str]) -> str:
    """Tokens as one text the automaton matches whole tokens in: each between two NULs, which no
    imported text holds (``transfer.limits`` refuses them)."""
    return TOKEN_EDGE + TOKEN_EDGE.join(tokens) + TOKEN_EDGE


def keys_line_split(recognition: str) -> tuple[str, list[str]]:
    """A recognition tier without its closing ``Keys:`` line, and the keys that line lists."""
    head, _, last = recognition.rpartition("\n")
    if not last.startswith(KEYS_PREFIX):
        return recognition, []
    keys = [word.strip() for word in last[len(KEYS_PREFIX) :].split(",") if word.strip()]
    return head.rstrip("\n"), keys


@dataclass(frozen=True)
class FragmentData:
    """A fragment as the export reads it from the Gem."""

    key: str
    ambient: str
    recognition: str
    inventory: str
    edges: tuple[tuple[str, str], ...] = ()  # edges out: target, relation
    triggers: tuple[str, ...] = ()


def entries_of(fragments: Iterable[FragmentData]) -> list[LoreEntry]:
    """Fragments as lorebook entries: the ambient tier a constant entry, recognition and
    inventory one entry, both keyed by what wakes the fragment (``entry_keys``). Each carries
    its part of the fragment, to be read back exactly."""
    entries: list[LoreEntry] = []
    for fragment in fragments:
        recognition, keys = keys_line_split(fragment.recognition)
        all_keys = entry_keys(fragment.key, fragment.triggers, keys)
        whole = {
            "key": fragment.key,
            **{tier: getattr(fragment, tier) for tier in TIERS},
            "edges": [list(edge) for edge in fragment.edges],
            "triggers": list(fragment.triggers),
        }
        content = _deep_content(recognition, fragment.inventory)
        deep = bool(content) or not fragment.ambient
        if fragment.ambient:
            entries.append(
                LoreEntry(
                    name=f"{fragment.key} (ambient)",
                    keys=all_keys,
                    secondary_keys=(),
                    content=fragment.ambient,
                    constant=True,
                    enabled=True,
                    where=f"{fragment.key}.ambient",
                    # The whole fragment rides on one of its entries.
                    fragment={"key": fragment.key, "ambient": fragment.ambient} if deep else whole,
                )
            )
        if deep:
            entries.append(
                LoreEntry(
                    name=fragment.key,
                    keys=all_keys,
                    secondary_keys=(),
                    content=content,
                    constant=False,
                    enabled=True,
                    where=fragment.key,
                    fragment=whole,
                )
            )
    return entries


def entry_keys(key: str, triggers: Iterable[str], keys_line: Iterable[str]) -> tuple[str, ...]:
    """A fragment's key, then its triggers, then the keys of its ``Keys:`` line (an older
    import's), each once: a name said again in other letter case is a duplicate, as
    SillyTavern matches keys in any case."""
    entry: dict[str, str] = {}
    for name in (key, *triggers, *keys_line):
        entry.setdefault(name.casefold(), name)
    return tuple(entry.values())


def _deep_content(recognition: str, inventory: str) -> str:
    """What another app should show when the fragment comes up: the recognition, then the
    inventory unless it already begins with the recognition."""
    if not inventory:
        return recognition
    if not recognition or inventory.startswith(recognition):
        return inventory
    return f"{recognition}\n\n{inventory}"
