"""How much a working-memory item matters and how it feels: Mira's scoring, adapted.

Pure: no Django. Seed ``003_…`` scores importance from 0.5 with boosts for its tags (insight
+0.3, urgent +0.2, emotion +0.1), linked memories (+0.05 each, at most +0.2) and emotional
intensity (|valence| × 0.1). Here the item's type stands for Mira's tags. Mira's recency term is
left out: it is computed at reading time there, and here decay already says how fresh an item
is; stored with it, every new item would score 1.

Valence, which Mira assigns herself, is read from the words by VADER (a lexicon and rules made
for short informal text): its compound score, -1 to +1.
"""

from datetime import datetime
from functools import cache

from vaderSentiment.vaderSentiment import SentimentIntensityAnalyzer

BASE = 0.5
# Mira's tag boosts, by the type that plays the tag's part.
TYPE_BOOST = {
    "pattern": 0.3,  # insight: an understanding that changes the picture
    "pin": 0.3,  # insight: what a person asked to be kept
    "secret": 0.2,  # urgent: it waits to be revealed
    "feeling": 0.1,  # emotion
    "desc": 0.0,
    "thought": 0.0,
}
PLAN_WITH_DUE_BOOST = 0.2  # urgent: a plan with a time needs doing
PLAN_OPEN_BOOST = 0.1
LINK_BOOST, LINK_BOOST_MAX = 0.05, 0.2
INTENSITY_WEIGHT = 0.1
REFRESH_BOOST = 0.05  # seed 003: an exact duplicate "boosts importance of existing"


@cache
def _analyzer() -> SentimentIntensityAnalyzer:
    return SentimentIntensityAnalyzer()


def valence_of(text: str) -> float:
    """The text's emotional valence, -1 (negative) to +1 (positive), two decimals."""
    return round(_analyzer().polarity_scores(text)["compound"], 2)


def importance_of(
    *, type: str, due: datetime | None, linked_fragments: int, valence: float
) -> float:
    """Importance 0 to 1 of a new item, two decimals."""
    if type == "plan":
        boost = PLAN_WITH_DUE_BOOST if due is not None else PLAN_OPEN_BOOST
    else:
        boost = TYPE_BOOST[type]
    links = min(LINK_BOOST_MAX, linked_fragments * LINK_BOOST)
    return round(min(1.0, BASE + boost + links + abs(valence) * INTENSITY_WEIGHT), 2)


def importance_refreshed(importance: float) -> float:
    """Importance of an item after an exact duplicate of it was written again."""
    return round(min(1.0, importance + REFRESH_BOOST), 2)
