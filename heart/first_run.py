"""The first run: while nothing has been said, the chat page and the Anvil offer the set-up
(who talks here, and the time zone) until the person saves it or puts it off."""

from events.models import Event

# Kept in the session: the person saved the set-up or said "not now" on this device.
OFFER_SET_ASIDE = "first_run_set_aside"


def nothing_said() -> bool:
    """Whether the event log holds no message yet."""
    return not Event.objects.exists()


def first_run_offered(session) -> bool:
    """Whether to offer the set-up: nothing said yet, and not set aside in this session."""
    return not session.get(OFFER_SET_ASIDE) and nothing_said()


def first_run_set_aside(session) -> None:
    session[OFFER_SET_ASIDE] = True
