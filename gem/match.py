"""Which working-memory item a few words mean: word overlap, for lifecycle tags and duplicates.

Pure: standard library only, no Django. ``<plan>done: the dishes</plan>`` resolves the active
plan whose words overlap "the dishes" most, at least ``MATCH_THRESHOLD`` (SPEC "Tag language").
"""

import re
from collections.abc import Iterable

MATCH_THRESHOLD = 0.15

_WORD_RE = re.compile(r"[^\W_]+(?:'[^\W_]+)*")


def _words(text: str) -> frozenset[str]:
    return frozenset(_WORD_RE.findall(text.replace("’", "'").casefold()))


def word_overlap(a: str, b: str) -> float:
    """Jaccard similarity of the two texts' word sets (case and punctuation ignored)."""
    words_a, words_b = _words(a), _words(b)
    union = words_a | words_b
    if not union:
        return 0.0
    return len(words_a & words_b) / len(union)


def best_match[K](
    text: str, candidates: Iterable[tuple[K, str]], threshold: float = MATCH_THRESHOLD
) -> K | None:
    """The id of the candidate whose text overlaps ``text`` most, if at least ``threshold``.

    Ties go to the earliest candidate.
    """
    best_id, best_score = None, 0.0
    for candidate_id, candidate_text in candidates:
        score = word_overlap(text, candidate_text)
        if score >= threshold and (best_id is None or score > best_score):
            best_id, best_score = candidate_id, score
    return best_id
