"""The best passage of a text for some query words, made as SQLite's FTS5 ``snippet()`` makes it.

FTS5 makes a passage only inside a MATCH: for search hits already found, ``snippet()`` would
match the query's words over the whole index a second time, at the cost of the ranking itself.
The text and the query words are enough: this module cuts the text into tokens as the index's
tokenizer (``porter unicode61 remove_diacritics 2``, ``lens/migrations/0001_search_indexes.py``)
does, finds the tokens whose stem is a query word's, and picks and marks the passage by FTS5's
own rules (the window of ``size`` tokens with the most distinct words, then the most words,
moved to centre them or to start a sentence). ``tests/lens/test_snippet.py`` holds it to
``snippet()`` itself. No ORM, no I/O.
"""

import re
import unicodedata
from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

# The characters cut and folded here exactly as by the tokenizer: ASCII, the Latin letters of
# Latin-1 and Latin Extended-A and -B (but for a few it folds otherwise) and the general
# punctuation (quotes, dashes, ellipsis). Its tables are older than Python's Unicode: newer
# letters and many emoji, which it counts as letters, are left to FTS5.
_NOT_PLAIN_RE = re.compile(
    "[^\x00-\u024f\u2010-\u205f]|[\u00b5\u017f\u01e0-\u01e3\u01ee\u01ef\u01fc-\u01ff]"
)
# Captured, so that splitting a text on it gives separator, token, separator, …, separator.
_ASCII_TOKEN_RE = re.compile(r"([A-Za-z0-9]+)")
_TOKEN_RE = re.compile(r"([^\W_]+)")
_SPACE = " \t\n\r"
PORTER_MAX_TOKEN = 64  # bytes; longer tokens are indexed unstemmed


def is_plain(text: str) -> bool:
    """Whether ``text`` holds only characters cut and folded here as the tokenizer does."""
    return text.isascii() or _NOT_PLAIN_RE.search(text) is None


def tokens(text: str) -> list[str]:
    """The stems of the tokens of a plain ``text``, as the index cuts and stems it."""
    return list(map(stem, _split(text)[1::2]))


def _split(text: str) -> list[str]:
    """Separator, token, separator, …, separator: the text cut as the tokenizer cuts it."""
    return (_ASCII_TOKEN_RE if text.isascii() else _TOKEN_RE).split(text)


@lru_cache(maxsize=65_536)
def stem(word: str) -> str:
    """The index's term for one token: folded (lower case, accents off), then Porter-stemmed
    (the UTF-8 bytes of a term with accented letters, one character a byte)."""
    folded = word.lower() if word.isascii() else "".join(map(_fold, word))
    if not folded.isascii():
        folded = folded.encode().decode("latin-1")  # the stemmer reads bytes
    if len(folded) < 3 or len(folded) > PORTER_MAX_TOKEN:
        return folded
    return porter(folded)


def _fold(char: str) -> str:
    """A letter in lower case without its accents."""
    decomposed = unicodedata.normalize("NFD", char)
    if len(decomposed) > 1 and all(unicodedata.category(m) == "Mn" for m in decomposed[1:]):
        char = decomposed[0]
    lower = char.lower()
    return lower if len(lower) == 1 else char


# --- the Porter stemmer, as FTS5's porter tokenizer has it ---------------------------------------
#
# Its steps test the word's bytes; any letter but a, e, i, o, u (and y after a consonant) is a
# consonant, accented letters too. Within a step the first suffix the word ends with is the only
# one tried, whether or not its condition holds.


def _is_vowel(char: str, y_is_vowel: bool) -> bool:
    return char in "aeiou" or (y_is_vowel and char == "y")


def _measure_from(word: str, previous_consonant: bool) -> int:
    """The end of the word's first vowel-consonant sequence (0 if there is none)."""
    consonant = previous_consonant
    i = 0
    while i < len(word):
        consonant = not _is_vowel(word[i], consonant)
        if not consonant:
            break
        i += 1
    i += 1
    while i < len(word):
        consonant = not _is_vowel(word[i], consonant)
        if consonant:
            return i + 1
        i += 1
    return 0


def _m_gt0(stem_: str) -> bool:
    return _measure_from(stem_, False) > 0


def _m_gt1(stem_: str) -> bool:
    n = _measure_from(stem_, False)
    return bool(n) and _measure_from(stem_[n:], True) > 0


def _m_eq1(stem_: str) -> bool:
    n = _measure_from(stem_, False)
    return bool(n) and _measure_from(stem_[n:], True) == 0


def _o_star(stem_: str) -> bool:
    """Ends consonant-vowel-consonant, the last not w, x or y."""
    if stem_[-1] in "wxy":
        return False
    mask, consonant = 0, False
    for char in stem_:
        consonant = not _is_vowel(char, consonant)
        mask = (mask << 1) + consonant
    return mask & 0b111 == 0b101


def _m_gt1_s_or_t(stem_: str) -> bool:
    return stem_[-1] in "st" and _m_gt1(stem_)


def _has_vowel(stem_: str) -> bool:
    return any(_is_vowel(char, n > 0) for n, char in enumerate(stem_))


def _rules(spec: str, condition) -> dict[str, list[tuple[str, str, object]]]:
    """Rules by the word's second-to-last letter, as ``"suffix>output …"``."""
    table: dict[str, list[tuple[str, str, object]]] = {}
    for rule in spec.split():
        suffix, output = rule.split(">")
        table.setdefault(suffix[-2], []).append((suffix, output, condition))
    return table


_STEP2 = _rules(
    "ational>ate tional>tion enci>ence anci>ance izer>ize logi>log bli>ble alli>al entli>ent "
    "eli>e ousli>ous ization>ize ation>ate ator>ate alism>al iveness>ive fulness>ful "
    "ousness>ous aliti>al iviti>ive biliti>ble",
    _m_gt0,
)
_STEP3 = _rules("ical>ic ness> icate>ic iciti>ic ful> ative> alize>al", _m_gt0)
_STEP4 = _rules(
    "al> ance> ence> er> ic> able> ible> ant> ement> ment> ent> ion> ou> ism> ate> iti> ous> "
    "ive> ize>",
    _m_gt1,
)
_STEP4["o"][0] = ("ion", "", _m_gt1_s_or_t)


def _apply(word: str, table) -> str:
    if len(word) < 2:
        return word
    for suffix, output, condition in table.get(word[-2], ()):
        if len(word) > len(suffix) and word.endswith(suffix):
            base = word[: -len(suffix)]
            return base + output if condition(base) else word
    return word


def porter(word: str) -> str:
    """The Porter stem of a folded word of 3 to 64 bytes."""
    word = _step1a(word)
    word = _step1b(word)
    if word[-1] == "y" and _has_vowel(word[:-1]):
        word = word[:-1] + "i"
    word = _apply(_apply(_apply(word, _STEP2), _STEP3), _STEP4)
    if word[-1] == "e" and (_m_gt1(word[:-1]) or (_m_eq1(word[:-1]) and not _o_star(word[:-1]))):
        word = word[:-1]
    if len(word) > 1 and word.endswith("ll") and _m_gt1(word[:-1]):
        word = word[:-1]
    return word


def _step1a(word: str) -> str:
    if word[-1] != "s":
        return word
    if word[-2] == "e":
        if (len(word) > 4 and word[-4:-2] == "ss") or (len(word) > 3 and word[-3] == "i"):
            return word[:-2]
        return word[:-1]
    return word if word[-2] == "s" else word[:-1]


def _step1b(word: str) -> str:
    if len(word) > 3 and word.endswith("eed"):
        return word[:-1] if _m_gt0(word[:-3]) else word
    for suffix in ("ed", "ing"):
        if len(word) > len(suffix) and word.endswith(suffix):
            if not _has_vowel(word[: -len(suffix)]):
                return word
            word = word[: -len(suffix)]
            break
    else:
        return word
    for suffix, output in (("at", "ate"), ("bl", "ble"), ("iz", "ize")):
        if len(word) > 2 and word.endswith(suffix):
            return word[:-2] + output
    last = word[-1]
    if not _is_vowel(last, False) and last not in "lsz" and len(word) > 1 and last == word[-2]:
        return word[:-1]
    if _m_eq1(word) and _o_star(word):
        return word + "e"
    return word


# --- the passage ------------------------------------------------------------------------------


def snippet(
    text: str,
    words: Sequence[str],
    *,
    start: str,
    end: str,
    ellipsis: str,
    size: int,
    plain_only: bool = True,
) -> str | None:
    """What ``snippet(table, column, start, end, ellipsis, size)`` gives for a column holding
    ``text`` in a row matched by ``"word1" OR "word2" …``: the best ``size`` tokens of the
    text, each matched word between ``start`` and ``end``, ``ellipsis`` where text is cut.
    ``None`` when the text or a word is not plain (``is_plain``): FTS5 must make that one.
    With ``plain_only=False`` such a text is cut too, by Python's letters, which may put the
    passage a token or two from where FTS5 would (for text that is shown, not indexed)."""
    query = _query(tuple(words), plain_only)
    if query is None or (plain_only and not is_plain(text)):
        return None
    pieces = _split(text)  # tokens at the odd places
    found = _phrase_matches(list(map(stem, pieces[1::2])), query)
    first = _best_start(pieces, found, query.lengths, size)
    return _highlight(pieces, found, query.lengths, first, size, start, end, ellipsis)


@dataclass(frozen=True, slots=True)
class _Query:
    """The phrases of ``"word1" OR "word2" …``, each the stems its word is searched by."""

    lengths: list[int]  # tokens in each phrase
    single: dict[str, tuple[int, ...]]  # the phrases of one token, by their stem
    longer: list[tuple[int, list[str]]]  # the others (a word the tokenizer cuts in two)


@lru_cache(maxsize=256)
def _query(words: tuple[str, ...], plain_only: bool = True) -> _Query | None:
    if plain_only and not all(map(is_plain, words)):
        return None
    phrases = [tokens(word) for word in words]
    single: dict[str, tuple[int, ...]] = {}
    for phrase, stems in enumerate(phrases):
        if len(stems) == 1:
            single[stems[0]] = (*single.get(stems[0], ()), phrase)
    longer = [(phrase, stems) for phrase, stems in enumerate(phrases) if len(stems) > 1]
    return _Query([len(stems) for stems in phrases], single, longer)


def _phrase_matches(stems: list[str], query: _Query) -> list[tuple[int, int]]:
    """``(token position, phrase)`` of each match of a phrase, in the text's order."""
    single = query.single
    found = [
        (position, phrase)
        for position, token in enumerate(stems)
        if token in single
        for phrase in single[token]
    ]
    if query.longer:
        for phrase, phrase_stems in query.longer:
            width = len(phrase_stems)
            found += [
                (position, phrase)
                for position in range(len(stems) - width + 1)
                if stems[position : position + width] == phrase_stems
            ]
        found.sort()
    return found


def _best_start(pieces, found, lengths, size) -> int:
    """The first token of the passage: the window that scores best, FTS5's way."""
    count = len(pieces) // 2
    if count <= size:
        return 0  # every window is the whole text
    positions = [position for position, _ in found]
    best_score, best_start = 0, 0
    # The sentence the token at ``read`` is in, read forward only as far as the matches go.
    sentence, read = 0, 0
    for position in positions:
        score, adjusted = _window_score(found, positions, lengths, position, size, count)
        if score > best_score:
            best_score, best_start = score, adjusted
        while read < position:
            read += 1
            before = pieces[2 * read]  # what precedes the token: a full stop and white space?
            stripped = before.rstrip(_SPACE)
            if stripped != before and stripped[-1:] in (".", ":"):
                sentence = read
        if sentence < position:
            score, _ = _window_score(found, positions, lengths, sentence, size, count)
            score += 120 if sentence == 0 else 100
            if score > best_score:
                best_score, best_start = score, sentence
    return best_start


def _window_score(found, positions, lengths, first, size, count) -> tuple[int, int]:
    """A window's score (1,000 a distinct phrase, 1 a repeat) and its start moved to centre the
    phrases it holds."""
    window = found[bisect_left(positions, first) : bisect_left(positions, first + size)]
    if not window:
        return 0, 0
    distinct = len({phrase for _, phrase in window})
    first_hit = window[0][0]
    last_end = window[-1][0] + lengths[window[-1][1]]
    adjusted = first_hit - (size - (last_end - first_hit)) // 2
    if adjusted + size > count:
        adjusted = count - size
    return 1000 * distinct + len(window) - distinct, max(adjusted, 0)


def _coalesced(found, lengths) -> list[tuple[int, int]]:
    """The marked runs: ``(first token, last token)``, overlapping phrase matches as one."""
    runs: list[list[int]] = []
    for position, phrase in found:
        last = position + lengths[phrase] - 1
        if runs and position <= runs[-1][1]:
            runs[-1][1] = max(runs[-1][1], last)
        else:
            runs.append([position, last])
    return [(first, last) for first, last in runs]


def _highlight(pieces, found, lengths, first, size, start, end, ellipsis) -> str:
    """The window's text with the marks put in, and ellipses where it is cut. A marked run that
    begins before the window is not marked; one that goes on past it is closed at its end."""
    last = first + size - 1
    whole = last >= len(pieces) // 2 - 1
    low = 2 * first + 1 if first else 0  # the text before the first token only from the start
    window = pieces[low : len(pieces) if whole else 2 * last + 2]
    for run_first, run_last in _coalesced(found, lengths):
        if run_first < first:
            continue
        if run_first > last:
            break
        window[2 * run_first + 1 - low] = start + window[2 * run_first + 1 - low]
        window[2 * min(run_last, last) + 1 - low] += end
    return (ellipsis if first else "") + "".join(window) + ("" if whole else ellipsis)


_TAG_RE = re.compile(r"</?[^\W\d_][\w'’-]*>")


def untagged(raw: str) -> str:
    """The text without tag markup, every run of whitespace one space."""
    return " ".join(_TAG_RE.sub(" ", raw or "").split())
