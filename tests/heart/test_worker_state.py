import pytest
from django.core.cache import cache
from django.urls import reverse

from events.models import Turn
from heart.services import turn_submit
from heart.worker_state import WorkerState, turn_waiting, worker_state
from tests.heart.test_views import HTMX, cluster_running

pytestmark = pytest.mark.django_db(databases="__all__")

READY = WorkerState("online", "The worker is ready", "")
STOPPED = WorkerState("offline", "The worker is not running: messages wait", "worker stopped")


@pytest.fixture(autouse=True)
def no_cluster_recorded(settings):
    """django-q2 keeps its clusters' record in the cache: one of the test's own, empty."""
    settings.CACHES = {
        "default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": "w"}
    }
    cache.clear()
    yield
    cache.clear()


def submit(text="<luna>hello</luna>"):
    return turn_submit(text=text, actor="luna", enqueue=False)


def test_a_stopped_worker_is_said_in_words_beside_its_dot():
    state = worker_state()
    assert (state.state, state.short) == ("offline", "worker stopped")
    assert "manage.py qcluster" in state.said


def test_a_running_worker_needs_no_words():
    cluster_running()
    assert worker_state() == READY


def test_a_reply_waiting_on_a_stopped_worker_says_so_and_that_the_message_is_kept():
    turn = submit()
    said = turn_waiting(turn, STOPPED)
    assert said == "Waiting: the worker is not running: messages wait. Your message is kept."


def test_a_reply_behind_others_counts_the_messages_ahead():
    first, second, third = submit("<luna>one</luna>"), submit("<luna>two</luna>"), submit()
    Turn.objects.filter(pk=first.pk).update(status="running")
    assert turn_waiting(third, READY) == "Waiting: 2 messages ahead of this one."
    assert turn_waiting(second, READY) == "Waiting: 1 message ahead of this one."


def test_a_reply_being_answered_again_says_the_first_try_stopped():
    turn = submit()
    Turn.objects.filter(pk=turn.pk).update(status="running", attempts=2)
    turn.refresh_from_db()
    assert turn_waiting(turn, READY) == (
        "Claude is answering again (attempt 2): the first try stopped."
    )


def test_a_reply_whose_call_is_tried_again_says_why():
    turn = submit()
    said = "Claude is overloaded (529 overloaded_error). Trying again in 4 s (retry 1 of 4)."
    Turn.objects.filter(pk=turn.pk).update(status="running", attempts=1, retrying=said)
    turn.refresh_from_db()
    assert turn_waiting(turn, READY) == said


def test_a_reply_whose_text_grows_needs_no_words():
    turn = submit()
    Turn.objects.filter(pk=turn.pk).update(status="running", attempts=1, partial_text="Hel")
    turn.refresh_from_db()
    assert turn_waiting(turn, READY) == ""


def test_the_pending_reply_shows_why_it_waits_in_the_chat_and_its_polls(admin_client):
    turn = submit()
    page = admin_client.get(reverse("heart-chat")).text
    why = '<p class="waiting-why">Waiting: the worker is not running'
    assert why in page
    poll = admin_client.get(reverse("heart-turn-detail", args=[turn.pk]), headers=HTMX).text
    assert why in poll


def test_a_page_of_several_waiting_replies_reads_the_worker_once(admin_client, monkeypatch):
    from heart import worker_state as module

    for text in ("<luna>one</luna>", "<luna>two</luna>", "<luna>three</luna>"):
        submit(text)
    looks = []
    monkeypatch.setattr(module, "_cluster_stats", lambda: looks.append(1) or [])
    page = admin_client.get(reverse("heart-chat"), headers={"HX-Request": "true"}).text
    assert page.count('<p class="waiting-why">') == 3
    assert len(looks) == 1
