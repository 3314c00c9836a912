"""Lorebook entries as fragments, and fragments as lorebook entries (docs/bridges.md).

Pure: plain data in and out, no Django.

An entry from elsewhere becomes a fragment like this:
- its key is its title (the entry's comment or name), else its first key, written as one word
  of the Gem's keys ("Old Harbour" → ``old-harbour``); two entries of one key are told apart
  by a number (``old-harbour-2``);
- a constant entry is always in SillyTavern's context, so its content is the fragment's
  ambient tier; a disabled one never is, so even a constant disabled entry is only recognition;
- any other entry is recognition when it is a single short paragraph, else its first
  paragraph is the recognition and the whole content the inventory (recall reads the
  inventory first, the recognition when asked for less);
- its keys and secondary keys, other than the key itself, end the recognition tier in one
  ``Keys:`` line, so search finds the fragment by them and recall shows them;
- an entry whose content names another entry's key (a whole word, any case) proposes an edge
  from it to that other fragment, "names".

An entry exported from here carries its fragment (``LoreEntry.fragment``: key, the tiers it
holds, its edges out), and is read back as that fragment exactly. Its keys are the fragment's
key and triggers, the names that wake it here, then the keys of the ``Keys:`` line an older
import ended the recognition tier with.
"""

import heapq
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from itertools import groupby, islice

import ahocorasick

from transfer.bundle import LoreEntry

KEY_MAX = 100  # gem.models.Fragment.key
KEY_PATTERN = re.compile(r"[\w][\w'-]*")  # gem.models.KEY_VALIDATOR
RECOGNITION_CHARS = 600  # a single paragraph up to this is recognition alone
KEYS_PREFIX = "Keys: "
NAMES = "names"  # the relation of an edge proposed because one entry names another
MENTION_MIN_CHARS = 3  # shorter keys ("a", "it") name nothing
MENTIONS_MAX = 50  # the entries one entry may name: the first in the file's order
TIERS = ("ambient", "recognition", "inventory")
MARK_FIELDS = {"key", *TIERS, "edges"}  # what an exported entry carries of its fragment
_WORD = re.compile(r"[\w']+")
_PARAGRAPH_BREAK = re.compile(r"\n[ \t]*\n")
_TOKEN = re.compile(r"(\w+)|(\W)")
TOKEN_EDGE = "\x00"


@dataclass
class LoreFragment:
    """What a draft says of one fragment: the tiers it sets (absent ones stay as they are) and
    the edges it proposes, from it (``target``, ``relation``)."""

    key: str
    tiers: dict[str, str] = field(default_factory=dict)
    edges: list[tuple[str, str]] = field(default_factory=list)
    entries: list[str] = field(default_factory=list)  # where in the file it came from


def key_of(title: str) -> str:
    """A title as one key word: lower case, words joined by hyphens; empty when no word."""
    words = _WORD.findall(title.casefold())
    key = "-".join(word.strip("'") for word in words if word.strip("'"))
    return key[:KEY_MAX].rstrip("-")


def fragments_of(
    entries: Sequence[LoreEntry], *, names: dict[str, str] | None = None
) -> list[LoreFragment]:
    """The fragments a lorebook's entries propose, in the file's order.

    ``names``: what the macros of SillyTavern stand for (``{"char": "Seraphina", "user":
    "luna"}``), replaced in the contents of entries from elsewhere.
    """
    by_key: dict[str, LoreFragment] = {}
    keys_of_entry: list[tuple[str, LoreEntry]] = []
    numbers: dict[str, int] = {}
    for entry in entries:
        marked = _marked(entry)
        if marked is not None:
            fragment = by_key.setdefault(marked["key"], LoreFragment(marked["key"]))
            fragment.tiers.update({tier: marked[tier] for tier in TIERS if tier in marked})
            fragment.edges += [tuple(edge) for edge in marked.get("edges", [])]
            fragment.entries.append(entry.where)
            continue
        key = _key_free(_title(entry), taken=by_key, numbers=numbers)
        fragment = by_key[key] = LoreFragment(key, entries=[entry.where])
        fragment.tiers = _tiers(entry, key=key, names=names or {})
        keys_of_entry.append((key, entry))
    _mentions_proposed(keys_of_entry, by_key)
    for fragment in by_key.values():
        fragment.edges = list(dict.fromkeys(fragment.edges))
    return list(by_key.values())


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
    return marked


def _title(entry: LoreEntry) -> str:
    for title in (entry.name, *entry.keys):
        if key_of(title):
            return title
    return f"entry {entry.where}"


def _key_free(title: str, *, taken: dict, numbers: dict[str, int]) -> str:
    """The title's key, or the first numbered one not ``taken``. ``numbers``: the number to try
    first for each key (keys are only ever added to ``taken``, so the ones before it still are
    taken), so a thousand entries of one title do not each count up from 2."""
    key = base = key_of(title)
    number = numbers.get(base, 2)
    while key in taken:
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


def _tiers(entry: LoreEntry, *, key: str, names: dict[str, str]) -> dict[str, str]:
    content = macros_replaced(entry.content.strip(), names)
    keys = [
        word
        for word in dict.fromkeys(k.strip() for k in (*entry.keys, *entry.secondary_keys))
        if word and key_of(word) != key
    ]
    keys_line = KEYS_PREFIX + ", ".join(keys) if keys else ""
    if entry.constant and entry.enabled:
        tiers = {"ambient": content}
        if keys_line:
            tiers["recognition"] = keys_line
        return tiers
    paragraphs = [part.strip() for part in _PARAGRAPH_BREAK.split(content) if part.strip()]
    if len(paragraphs) <= 1 and len(content) <= RECOGNITION_CHARS:
        recognition, inventory = content, ""
    else:
        recognition, inventory = paragraphs[0], content
    tiers = {"recognition": "\n\n".join(part for part in (recognition, keys_line) if part)}
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
    for number, (key, entry) in enumerate(keys_of_entry):
        found = {
            id(owners): owners for _, owners in automaton.iter(_joined(_tokens(entry.content)))
        }
        merged = (other for other, _ in groupby(heapq.merge(*found.values())))
        named = (other for other in merged if other != number)
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
