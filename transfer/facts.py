"""What a remembered fact from another companion is here: a plan, a pin or a description.

Pure: the standard library and ``gem.due``. mem0 and Letta keep facts about the person as plain
sentences ("Plans to visit Lisbon next Friday", "Prefers tea over coffee"). Typed by what
they say:

- a dated intention is a **plan**: words of intending (plans to, going to, will, wants to,
  needs to, appointment, …) and a time ``gem.due`` can read, read from when it was remembered;
- a stated preference is a **pin**: words of liking or disliking (likes, loves, prefers,
  favourite, hates, can't stand, allergic, …), which hold until the person drops them;
- anything else is a **desc**: a description of the person, fading unless it is renewed.
"""

import re
from datetime import datetime

from gem.due import due_from_text

PLAN, PIN, DESC = "plan", "pin", "desc"
INTENTION = re.compile(
    r"\b(plans?|planning|planned|going to|gonna|will|wants? to|would like to|intends?"
    r"|needs? to|has to|have to|must|should|hopes? to|aims? to|scheduled|appointment"
    r"|meeting|deadline|remind|trip|visit(?:ing)?|flight|exam|interview|due)\b",
    re.IGNORECASE,
)
PREFERENCE = re.compile(
    r"\b(likes?|liked|loves?|loved|prefers?|preferred|favou?rites?|enjoys?|enjoyed|fond of"
    r"|hates?|hated|dislikes?|disliked|can(?:no|')t stand|allergic|a fan of|vegan"
    r"|vegetarian|does(?:n't| not) (?:like|eat|drink))\b",
    re.IGNORECASE,
)


def fact_typed(text: str, *, at: datetime, zone: str) -> tuple[str, datetime | None]:
    """The working-memory type of a fact remembered at ``at`` and, for a plan, when it is due."""
    if INTENTION.search(text):
        due = due_from_text(text, written_at=at, time_zone=zone)
        if due is not None:
            return PLAN, due
    if PREFERENCE.search(text):
        return PIN, None
    return DESC, None
