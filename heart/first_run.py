"""The first run: while nothing has been said, the chat page and the Anvil offer the set-up
(who talks here, the companion's name, and the time zone) until the person saves it or puts it
off; saving it opens the chat with the companion's greeting (``heart.services.greeting_record``)."""

from events.models import Event
from events.parse import parse
from gem.models import WakeTextKind
from gem.selectors import identities_current, wake_text_current

# Kept in the session: the person saved the set-up or said "not now" on this device.
OFFER_SET_ASIDE = "first_run_set_aside"

# In the greeting's text: the companion's name, and the person's (their first identity).
NAME = "{name}"
YOU = "{you}"


def nothing_said() -> bool:
    """Whether the event log holds no message yet."""
    return not Event.objects.exists()


def first_run_offered(session) -> bool:
    """Whether to offer the set-up: nothing said yet, and not set aside in this session."""
    return not session.get(OFFER_SET_ASIDE) and nothing_said()


def first_run_set_aside(session) -> None:
    session[OFFER_SET_ASIDE] = True


def greeting_text(*, companion: str) -> str:
    """The companion's first message: the greeting in use (a wake text the person writes in
    the Anvil, or a card's first message an import proposed) as ``companion`` says it to the
    person's first identity (``greeting_compose``)."""
    users = identities_current().users
    return greeting_compose(
        wake_text_current(WakeTextKind.GREETING),
        companion=companion,
        person=users[0] if users else "you",
    )


def greeting_compose(words: str, *, companion: str, person: str = "you") -> str:
    """``words`` as ``companion``'s message: ``{name}`` is her name, ``{you}`` the person's, and
    words with no display tag are spoken (``<say>``), as a reply's would be. Empty words are no
    greeting ("")."""
    words = words.replace(NAME, companion).replace(YOU, person).strip()
    if not words:
        return ""
    if not parse(words, identities=[companion]).segments:
        words = f"<say>{words}</say>"
    return f"<{companion}>{words}</{companion}>"
