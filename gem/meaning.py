"""What a working-memory item means, for telling duplicates apart: Mira's semantic hash.

Pure: no Django. Seed ``003_…`` hashes "normalise, drop stop words, stem, sort": two texts that
say the same thing with other spacing, case, punctuation, word order or word endings ("Recipes,
no cilantro!" and "no cilantro in recipe") get one hash. Seed ``003_…`` also flags items "> 90%
similar" for review; a hash has no degree of similarity, so near duplicates are judged on the
same stemmed words instead (``near_duplicate``).
"""

import hashlib
import re
from functools import cache

import snowballstemmer

from gem.words import STOP_WORDS

HASH_LENGTH = 16  # hex digits of SHA-256 kept, as seed 003 does
# A near duplicate shares at least this many stemmed words with its twin, and they are at least
# this share of the shorter item's words: "no cilantro in ANY recipe suggestions!" and "no
# cilantro in recipes" share all of the shorter one's; "call mom on sunday" and "call mom on
# monday" share two of three, and are two plans.
NEAR_SHARED_WORDS = 2
NEAR_SHARE = 0.75

_WORD_RE = re.compile(r"[^\W_]+(?:'[^\W_]+)*")


@cache
def _stemmer():
    return snowballstemmer.stemmer("english")


def meaning_words(text: str) -> list[str]:
    """The text's words, case and punctuation ignored, stop words dropped, stemmed, sorted.

    A text of stop words only ("I am here") keeps all its words, so that it still differs from
    another such text.
    """
    words = _WORD_RE.findall(text.replace("’", "'").casefold())
    content = [word for word in words if word not in STOP_WORDS] or words
    return sorted(_stemmer().stemWords(content))


def semantic_hash(text: str) -> str:
    """Seed 003's semantic hash of a text: equal for texts of the same meaning words."""
    digest = hashlib.sha256(" ".join(meaning_words(text)).encode())
    return digest.hexdigest()[:HASH_LENGTH]


def near_duplicate(text: str, other: str) -> bool:
    """Whether two texts say nearly the same thing (their meaning words, ``NEAR_SHARE``)."""
    words, other_words = set(meaning_words(text)), set(meaning_words(other))
    shared = len(words & other_words)
    shorter = min(len(words), len(other_words))
    return shared >= NEAR_SHARED_WORDS and shared / shorter >= NEAR_SHARE
