"""Which working-memory item a few words mean: word overlap, for lifecycle tags and duplicates.

Pure: standard library only, no Django. ``<plan>done: wash the dishes</plan>`` resolves the
active plan whose content words overlap "wash the dishes" most, at least ``MATCH_THRESHOLD``
(SPEC "Tag language"). Content words are the words left once ``gem.words.STOP_WORDS`` are
dropped: "the dishes" and "call the pharmacy" share only "the", so they do not match.
"""

import re
from collections.abc import Iterable

from gem.words import STOP_WORDS

MATCH_THRESHOLD = 0.15

_WORD_RE = re.compile(r"[^\W_]+(?:'[^\W_]+)*")


def content_words(text: str) -> frozenset[str]:
    """The text's words, case and punctuation ignored, stop words dropped."""
    words = _WORD_RE.findall(text.replace("’", "'").casefold())
    return frozenset(word for word in words if word not in STOP_WORDS)


def word_overlap(a: str, b: str) -> float:
    """Jaccard similarity of the two texts' content words; 0.0 when either has none."""
    words_a, words_b = content_words(a), content_words(b)
    union = words_a | words_b
    if not union:
        return 0.0
    return len(words_a & words_b) / len(union)


def best_match[K](
    text: str, candidates: Iterable[tuple[K, str]], threshold: float = MATCH_THRESHOLD
) -> K | None:
    """The id of the candidate whose text overlaps ``text`` most, if at least ``threshold``.

    ``candidates`` come newest first (working memory's default ordering, ``-refreshed_at,
    -id``), and a tie goes to the earlier candidate: of two items the words name equally, the
    newest is meant. None when no candidate reaches the threshold.
    """
    best_id, best_score = None, 0.0
    for candidate_id, candidate_text in candidates:
        score = word_overlap(text, candidate_text)
        if score >= threshold and (best_id is None or score > best_score):
            best_id, best_score = candidate_id, score
    return best_id
