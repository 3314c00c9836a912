"""The chat page and its partials (``heart.views``)."""

import errno
import html
import io
import re
from datetime import timedelta
from pathlib import Path

import pytest
from django.core.cache import cache
from django.core.files.storage import FileSystemStorage, default_storage
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connections
from django.urls import reverse
from django.utils import timezone
from django_q.brokers import get_broker
from django_q.signing import SignedPackage
from django_q.status import Stat, Status
from PIL import Image

from events.models import Correction, Event, Turn
from gem.models import WorkingMemory
from gem.services import working_memory_update
from heart import services, views
from heart.services import turn_submit
from heart.tasks import run_turns_task
from silentstar import disks
from tests.conftest import event_log_triggers_lifted
from tests.silentstar.test_disks import as_django_wraps, sqlite_error, store_full, store_read_only

pytestmark = pytest.mark.django_db(databases="__all__")

HTMX = {"HX-Request": "true"}


@pytest.fixture(autouse=True)
def isolated(settings, tmp_path):
    """Uploads in a folder of this test's own, a cache of its own, the companion offline."""
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.CACHES = {
        "default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": "v"}
    }
    settings.COMPANION_OFFLINE = True
    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def static_dir(settings, tmp_path):
    """Minimal manifest and service worker in a static folder of the test's own."""
    folder = tmp_path / "static"
    (folder / "heart").mkdir(parents=True)
    (folder / "heart" / "manifest.webmanifest").write_text('{"name": "silentstar"}')
    (folder / "heart" / "sw.js").write_text("self.addEventListener('fetch', () => {});")
    settings.STATICFILES_DIRS = [folder]
    return folder


def png(size=(6, 4)):
    buffer = io.BytesIO()
    Image.new("RGB", size, (10, 20, 30)).save(buffer, format="PNG")
    return buffer.getvalue()


def submit(text="<luna>hello</luna>", actor="luna", **kwargs):
    return turn_submit(text=text, actor=actor, enqueue=False, **kwargs)


def answer(turn, text, *, actor="claude"):
    """Finish a turn with the reply ``text``, as the worker would."""
    reply = Event.objects.create(content=text, actor=actor)
    Turn.objects.filter(pk=turn.pk).update(status="done", reply_event=reply)
    return reply


def send(client, htmx=True, **data):
    return client.post(reverse("heart-message-send"), data, headers=HTMX if htmx else {})


def stored_files(settings):
    return [path for path in Path(settings.MEDIA_ROOT).rglob("*") if path.is_file()]


def article_ids(html):
    return re.findall(r'<article [^>]*id="((?:event|turn)-\d+)"', html)


# --- Signed out and wrong methods --------------------------------------------------------------

PRIVATE = [
    ("get", "heart-chat", {}),
    ("get", "heart-history", {}),
    ("post", "heart-message-send", {}),
    ("get", "heart-turn-detail", {"turn_id": 1}),
    ("post", "heart-turn-retry", {"turn_id": 1}),
    ("get", "heart-worker-status", {}),
    ("get", "heart-image", {"event_id": 1}),
]


@pytest.mark.parametrize(("method", "name", "kwargs"), PRIVATE, ids=[p[1] for p in PRIVATE])
def test_it_sends_visitors_who_are_not_signed_in_to_the_login_page(client, method, name, kwargs):
    url = reverse(name, kwargs=kwargs)
    response = getattr(client, method)(url)
    assert response.status_code == 302
    assert response.url == f"{reverse('login')}?next={url}"


WRONG_METHOD = [
    ("post", "heart-chat", {}),
    ("post", "heart-history", {}),
    ("get", "heart-message-send", {}),
    ("post", "heart-turn-detail", {"turn_id": 1}),
    ("get", "heart-turn-retry", {"turn_id": 1}),
    ("post", "heart-worker-status", {}),
    ("delete", "heart-image", {"event_id": 1}),
    ("post", "heart-manifest", {}),
    ("post", "heart-service-worker", {}),
]


@pytest.mark.parametrize(
    ("method", "name", "kwargs"), WRONG_METHOD, ids=[p[1] for p in WRONG_METHOD]
)
def test_it_refuses_the_wrong_method(admin_client, method, name, kwargs):
    response = getattr(admin_client, method)(reverse(name, kwargs=kwargs))
    assert response.status_code == 405


# --- The page -----------------------------------------------------------------------------------


def test_it_shows_the_whole_page(admin_client):
    response = admin_client.get(reverse("heart-chat"))
    assert response.status_code == 200
    html = response.text
    assert html.startswith("<!doctype html>")
    assert re.search(r'<body class="chat" data-offline="true" data-send-url="/messages/"', html)
    assert re.search(r'<meta name="csrf-token" content="\w+">', html)
    assert re.search(r"""hx-headers='\{"X-CSRFToken": "\w+"\}'""", html)
    assert 'name="csrfmiddlewaretoken"' in html
    assert '<link rel="manifest" href="/manifest.webmanifest">' in html
    assert '<meta name="theme-color" content="#0d0d10">' in html
    assert 'href="/static/heart/chat.css"' in html
    assert 'href="/static/icons/icon-192.png"' in html and 'href="/static/icons/icon.svg"' in html
    for script in ("vendor/htmx-2.0.8.min.js", "heart/space.js", "heart/chat.js"):
        assert f'<script defer src="/static/{script}"></script>' in html
    body = html.split("<body", 1)[1]
    assert body.split(">", 1)[1].lstrip().startswith('<canvas id="space" aria-hidden="true">')
    assert '<main id="conversation">' in html and '<div id="history">' in html
    assert 'id="worker-status"' in html and "Anvil" in html
    assert f'<form class="logout" method="post" action="{reverse("logout")}">' in html


def test_it_sets_identity_colours_as_custom_properties(admin_client):
    html = admin_client.get(reverse("heart-chat")).text
    assert "--identity-luna: #b0b0bc;" in html
    assert "--identity-ylhara: #9fc4b8;" in html
    assert "--identity-claude: #8b8ec8;" in html


def test_it_offers_a_chip_for_each_of_the_persons_identities_only(admin_client):
    html = admin_client.get(reverse("heart-chat")).text
    chips = re.findall(
        r'<button type="button" class="chip" role="radio" data-identity="([^"]+)"', html
    )
    assert chips == ["hasuki", "renki", "luna", "chloe", "strah"]
    assert (
        '<button type="button" class="chip" role="radio" data-identity="luna" '
        'data-identity-slug="luna" aria-checked="false" tabindex="-1">luna</button>'
    ) in html


def test_it_chooses_the_first_identity_before_anything_is_said(admin_client):
    html = admin_client.get(reverse("heart-chat")).text
    assert re.findall(r'data-identity="(\w+)"[^>]*aria-checked="true"', html) == ["hasuki"]
    assert '<input type="hidden" name="identity" id="identity-field" value="hasuki">' in html
    assert '<option value="hasuki" selected>hasuki</option>' in html
    assert "nobody in particular" not in html


def test_it_chooses_the_identity_of_the_persons_last_message(admin_client):
    submit("<chloe>hello</chloe>", actor="chloe")
    submit("<renki>and me</renki>", actor="renki")
    html = admin_client.get(reverse("heart-chat")).text
    assert re.findall(r'data-identity="(\w+)"[^>]*aria-checked="true"', html) == ["renki"]
    assert '<input type="hidden" name="identity" id="identity-field" value="renki">' in html
    assert '<option value="renki" selected>renki</option>' in html


def test_it_has_the_composer(admin_client):
    html = admin_client.get(reverse("heart-chat")).text
    assert (
        '<form id="composer" action="/messages/" method="post" enctype="multipart/form-data">'
    ) in html
    assert '<div id="identity-chips" role="radiogroup"' in html
    for tag, group in (("do", "format"), ("narrate", "format"), ("plan", "knowledge")):
        assert f'data-tag="{tag}" data-group="{group}" aria-pressed="false"' in html
    assert 'data-tag="pin" data-group="knowledge"' in html
    assert '<div id="input" contenteditable="true" role="textbox" aria-multiline="true"' in html
    assert '<input type="hidden" name="message" id="message-field">' in html
    assert '<input type="hidden" name="identity" id="identity-field" value="hasuki">' in html
    assert '<div id="send-keys" hidden><label for="enter-sends">' in html
    assert (
        '<input type="file" name="image" id="image-input" '
        'accept="image/jpeg,image/png,image/gif,image/webp" hidden>'
    ) in html
    for element in ('id="image-button"', 'id="image-preview" hidden', 'id="image-remove"'):
        assert element in html
    assert '<button type="submit" id="send">send</button>' in html
    assert '<div id="composer-error" aria-live="polite">' in html


def test_it_labels_the_offline_companion(admin_client, settings):
    assert "offline-badge" in admin_client.get(reverse("heart-chat")).text
    settings.COMPANION_OFFLINE = False
    html = admin_client.get(reverse("heart-chat")).text
    assert "offline-badge" not in html
    assert 'data-offline="false"' in html


def test_it_labels_a_local_model(admin_client, settings):
    settings.COMPANION_OFFLINE = False
    settings.LOCAL_SERVER = True
    settings.HEART_MODEL = "qwen3:8b"
    html = admin_client.get(reverse("heart-chat")).text
    assert 'title="No ANTHROPIC_API_KEY is set: a local model (qwen3:8b) answers">local' in html


def test_it_answers_htmx_with_the_history_partial(admin_client):
    turn = submit("<luna>hello *you*</luna>")
    response = admin_client.get(reverse("heart-chat"), headers=HTMX)
    assert response.status_code == 200
    html = response.text.strip()
    assert html.startswith('<div id="history">') and html.endswith("</div>")
    assert "<!doctype" not in html and "composer" not in html
    assert article_ids(html) == [f"event-{turn.event_id}", f"turn-{turn.pk}"]
    assert "hello <em>you</em>" in html
    assert "HX-Request" in response["Vary"]


def test_it_shows_messages_of_both_sides(admin_client):
    turn = submit("<luna>hi <plan>call the pharmacy</plan> <do>waves</do></luna>")
    reply = answer(turn, "<claude><say>**Hello** <img src=x onerror=alert(1)></say><do>smiles</do>")
    html = admin_client.get(reverse("heart-chat")).text
    user = html.split(f'id="event-{turn.event_id}"', 1)[1].split("</article>", 1)[0]
    assert 'data-identity="luna" data-identity-slug="luna"' in user
    assert '<header class="who"><span class="name">luna</span> · <time' in user
    assert (
        '<div class="segment say">hi <span class="knowledge plan">call the pharmacy</span></div>'
    ) in user
    assert '<div class="segment do">waves</div>' in user
    companion = html.split(f'id="event-{reply.pk}"', 1)[1].split("</article>", 1)[0]
    assert '<article class="message companion"' in html
    assert "<strong>Hello</strong> &lt;img src=x onerror=alert(1)&gt;" in companion
    assert '<div class="segment do">smiles</div>' in companion
    assert f'id="turn-{turn.pk}"' not in html  # answered: nothing left to poll


def test_it_leaves_secret_replies_out(admin_client):
    turn = submit()
    reply = answer(turn, "<claude><thought>keep this to myself</thought></claude>")
    html = admin_client.get(reverse("heart-chat")).text
    assert f"event-{reply.pk}" not in html and "keep this to myself" not in html


def test_it_shows_unanswered_turns_after_their_message(admin_client):
    failed = submit("<luna>first</luna>")
    Turn.objects.filter(pk=failed.pk).update(status="error", error="The API is overloaded.")
    waiting = submit("<luna>second</luna>")
    html = admin_client.get(reverse("heart-chat")).text
    assert article_ids(html) == [
        f"event-{failed.event_id}",
        f"turn-{failed.pk}",
        f"event-{waiting.event_id}",
        f"turn-{waiting.pk}",
    ]
    assert "The API is overloaded." in html
    assert f'hx-get="/turns/{waiting.pk}/"' in html


# --- History pages --------------------------------------------------------------------------


def test_it_pages_the_history_thirty_at_a_time(admin_client):
    events = [
        Event.objects.create(content=f"<say>message {n}</say>", actor="luna") for n in range(70)
    ]
    ids = [event.pk for event in events]

    page = admin_client.get(reverse("heart-chat")).text
    assert article_ids(page) == [f"event-{i}" for i in ids[40:]]
    assert (
        f'<button type="submit" class="earlier" form="earlier-form" name="before" '
        f'value="{ids[40]}" hx-get="/history/?before={ids[40]}" hx-target="this" '
        'hx-swap="outerHTML">earlier</button>'
    ) in page
    assert '<form id="earlier-form" method="get" action="/" hidden></form>' in page

    older = admin_client.get(reverse("heart-history"), {"before": ids[40]}, headers=HTMX)
    assert older.status_code == 200
    assert older.text.lstrip().startswith('<button type="submit" class="earlier"')
    assert article_ids(older.text) == [f"event-{i}" for i in ids[10:40]]
    assert f'hx-get="/history/?before={ids[10]}"' in older.text
    assert 'hx-target="this" hx-swap="outerHTML"' in older.text

    last = admin_client.get(reverse("heart-history"), {"before": ids[10]}, headers=HTMX)
    assert article_ids(last.text) == [f"event-{i}" for i in ids[:10]]
    assert 'class="earlier"' not in last.text


def test_it_shows_an_older_page_without_javascript(admin_client):
    events = [Event.objects.create(content=f"message {n}", actor="luna") for n in range(35)]
    page = admin_client.get(reverse("heart-chat"), {"before": events[5].pk})
    assert article_ids(page.text) == [f"event-{e.pk}" for e in events[:5]]
    assert "<!doctype html>" in page.text


def test_it_has_no_earlier_button_when_everything_fits(admin_client):
    for n in range(30):
        Event.objects.create(content=f"message {n}", actor="luna")
    html = admin_client.get(reverse("heart-chat")).text
    assert len(article_ids(html)) == 30 and 'class="earlier"' not in html


@pytest.mark.parametrize("query", [{}, {"before": "abc"}, {"before": "0"}, {"before": "-1"}])
def test_it_refuses_a_bad_history_position(admin_client, query):
    response = admin_client.get(reverse("heart-history"), query, headers=HTMX)
    assert response.status_code == 400
    assert 'class="composer-error"' in response.text


def test_it_refuses_a_bad_position_on_the_page_too(admin_client):
    assert admin_client.get(reverse("heart-chat"), {"before": "x"}).status_code == 400


# --- Sending ----------------------------------------------------------------------------------


def test_it_sends_a_message_with_an_identity_and_a_plan(admin_client):
    response = send(
        admin_client, message="hi <plan>call the pharmacy friday</plan> *soon*", identity="luna"
    )
    assert response.status_code == 201
    event = Event.objects.get()
    assert event.content == "<luna>hi <plan>call the pharmacy friday</plan> *soon*</luna>"
    assert event.actor == "luna" and not event.image
    turn = Turn.objects.get(event=event)
    assert turn.status == "queued"
    assert WorkingMemory.objects.get(type="plan").content == "call the pharmacy friday"
    html = response.text
    assert article_ids(html) == [f"event-{event.pk}", f"turn-{turn.pk}"]
    assert '<span class="knowledge plan">call the pharmacy friday</span> <em>soon</em>' in html
    assert f'<article class="message companion pending" id="turn-{turn.pk}"' in html
    assert f'hx-get="/turns/{turn.pk}/" hx-trigger="load delay:300ms"' in html


def test_it_keeps_a_line_break_as_the_browser_posts_it_as_one_newline(admin_client):
    assert send(admin_client, message="one\r\ntwo\rthree", identity="luna").status_code == 201
    assert Event.objects.get().content == "<luna>one\ntwo\nthree</luna>"


def test_it_sends_a_message_without_an_identity_as_the_first_identity(admin_client):
    assert send(admin_client, message="just me", identity="").status_code == 201
    event = Event.objects.get()
    assert (event.content, event.actor) == ("<hasuki>just me</hasuki>", "hasuki")


def test_it_sends_a_message_without_an_identity_as_the_last_identity_used(admin_client):
    submit("<luna>earlier</luna>", actor="luna")
    response = send(admin_client, message="<plan>water the plants</plan>", identity="")
    assert response.status_code == 201
    event = Event.objects.order_by("pk").last()
    assert (event.content, event.actor) == ("<luna><plan>water the plants</plan></luna>", "luna")
    assert WorkingMemory.objects.get(type="plan").actor == "luna"


def test_it_answers_the_turn_after_the_request(admin_client, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True, using="events"):
        response = send(admin_client, message="hello there", identity="renki")
    assert response.status_code == 201
    turn = Turn.objects.get()
    assert turn.status == "done" and turn.reply_event is not None
    detail = admin_client.get(reverse("heart-turn-detail", args=[turn.pk]), headers=HTMX)
    assert f'id="event-{turn.reply_event_id}"' in detail.text
    assert "hx-trigger" not in detail.text
    assert "I got your message, renki: “hello there”" in detail.text  # the offline companion


def test_it_redirects_a_plain_form_post_back_to_the_page(admin_client):
    response = send(admin_client, htmx=False, message="no script here", identity="chloe")
    assert response.status_code == 303 and response.url == reverse("heart-chat")
    assert Event.objects.get().content == "<chloe>no script here</chloe>"


def test_it_gives_scripts_a_partial_even_without_the_htmx_header(admin_client):
    response = admin_client.post(
        reverse("heart-message-send"), {"message": "by fetch"}, headers={"Sec-Fetch-Mode": "cors"}
    )
    assert response.status_code == 201 and "<article" in response.text


def test_it_shows_a_plain_form_posts_error_on_the_page(admin_client):
    response = send(admin_client, htmx=False, message="  ")
    assert response.status_code == 303
    html = admin_client.get(response.url).text
    assert '<p class="composer-error" role="alert">Write a message or attach an image.</p>' in html
    assert not Event.objects.exists()


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        ({"message": ""}, "Write a message or attach an image."),
        ({"message": "hi", "identity": "claude"}, "“claude” is not one of your identities."),
        ({"message": "x" * 20_001}, "The message is too long"),
    ],
)
def test_it_refuses_a_bad_message(admin_client, data, reason):
    response = send(admin_client, **data)
    assert response.status_code == 400
    assert response.text.startswith('<p class="composer-error" role="alert">')
    assert reason in response.text
    assert not Event.objects.exists() and not Turn.objects.exists()


def test_it_takes_a_message_behind_the_log_at_the_logs_last_moment(admin_client, settings):
    """A log run ahead (a replay with ``at``), or a clock set back: the message is not refused
    for it, and comes after the last event."""
    ahead = submit(at=timezone.now() + timedelta(days=2)).event
    response = send(admin_client, message="now", image=SimpleUploadedFile("a.png", png()))
    assert response.status_code == 201
    latest = Event.objects.order_by("pk").last()
    assert latest.content == "<luna>now</luna>" and latest.ts == ahead.ts
    assert [path.name for path in stored_files(settings)] == [Path(latest.image.name).name]


def test_it_removes_the_stored_image_when_the_message_fails_to_be_stored(
    admin_client, settings, monkeypatch
):
    def failing(**kwargs):
        raise RuntimeError("the disk is full")

    monkeypatch.setattr(views, "turn_submit", failing)
    with pytest.raises(RuntimeError, match="the disk is full"):
        send(admin_client, message="look", image=SimpleUploadedFile("a.png", png()))
    assert stored_files(settings) == []


def test_it_keeps_the_image_of_a_message_logged_before_a_later_step_failed(
    admin_client, settings, monkeypatch
):
    def failing():
        raise RuntimeError("the counter is stuck")

    monkeypatch.setattr(services, "turn_counter_advance", failing)
    with pytest.raises(RuntimeError, match="the counter is stuck"):
        send(admin_client, message="look", image=SimpleUploadedFile("a.png", png()))
    event = Event.objects.get()
    assert stored_files(settings) == [Path(settings.MEDIA_ROOT) / event.image.name]


# --- Images ---------------------------------------------------------------------------------


def test_it_stores_an_image_and_serves_it_to_the_owner_only(admin_client, client):
    data = png()
    response = send(
        admin_client, message="look", identity="luna", image=SimpleUploadedFile("x.jpeg", data)
    )
    assert response.status_code == 201
    event = Event.objects.get()
    now = timezone.now()
    assert re.fullmatch(rf"images/{now:%Y/%m}/[0-9a-f]{{32}}\.png", event.image.name)
    with default_storage.open(event.image.name) as stored:
        assert stored.read() == data
    url = reverse("heart-image", args=[event.pk])
    assert f'<img class="attached" src="{url}" alt="image sent by luna" loading="lazy">' in (
        response.text
    )

    served = admin_client.get(url)
    assert served.status_code == 200 and served["Content-Type"] == "image/png"
    assert b"".join(served.streaming_content) == data
    assert "private" in served["Cache-Control"]

    refused = client.get(url)
    assert refused.status_code == 302 and refused.url.startswith(reverse("login"))


def test_it_accepts_an_image_without_text(admin_client):
    response = send(admin_client, message="", image=SimpleUploadedFile("x.png", png()))
    assert response.status_code == 201
    assert Event.objects.get().image


def bmp():
    buffer = io.BytesIO()
    Image.new("RGB", (4, 4)).save(buffer, format="BMP")
    return buffer.getvalue()


@pytest.mark.parametrize(
    ("content", "overrides", "reason"),
    [
        (b"not an image at all", {}, "That file is not an image that can be read"),
        (bmp(), {}, "Only JPEG, PNG, GIF or WebP images can be sent, not BMP."),
        (png((20, 20)), {"IMAGE_MAX_PIXELS": 100}, "20×20 pixels; images may have at most 100"),
        (png(), {"IMAGE_MAX_BYTES": 50}, "images may be at most 50 bytes"),
    ],
    ids=["text-named-png", "bmp", "too-many-pixels", "too-many-bytes"],
)
def test_it_refuses_a_bad_image(admin_client, settings, content, overrides, reason):
    for name, value in overrides.items():
        setattr(settings, name, value)
    upload = SimpleUploadedFile("picture.png", content)
    response = send(admin_client, message="look", identity="luna", image=upload)
    assert response.status_code == 400
    assert reason in response.text
    assert not Event.objects.exists()
    assert stored_files(settings) == []


def test_it_answers_404_for_a_message_without_an_image(admin_client):
    event = submit().event
    assert admin_client.get(reverse("heart-image", args=[event.pk])).status_code == 404
    assert admin_client.get(reverse("heart-image", args=[event.pk + 99])).status_code == 404


def test_it_answers_404_when_the_image_file_is_gone(admin_client):
    event = submit(image="images/2020/01/missing.png").event
    assert admin_client.get(reverse("heart-image", args=[event.pk])).status_code == 404


# --- A turn as it goes -------------------------------------------------------------------------


def turn_detail(client, turn):
    return client.get(reverse("heart-turn-detail", args=[turn.pk]), headers=HTMX)


def test_it_keeps_polling_a_queued_turn(admin_client):
    turn = submit()
    response = turn_detail(admin_client, turn)
    assert response.status_code == 200
    html = response.text.strip()
    assert html.startswith(
        f'<article class="message companion pending" id="turn-{turn.pk}" data-turn="{turn.pk}"'
    )
    assert f'hx-get="/turns/{turn.pk}/" hx-trigger="load delay:300ms" hx-swap="outerHTML"' in html
    assert '<span class="breathing" role="status" aria-label="Claude is answering"></span>' in html


def test_it_shows_the_text_so_far_safely_while_running(admin_client):
    turn = submit()
    Turn.objects.filter(pk=turn.pk).update(
        status="running", partial_text="I **see** <img src=x onerror=alert(1)>"
    )
    html = turn_detail(admin_client, turn).text
    assert "I <strong>see</strong> &lt;img src=x onerror=alert(1)&gt;" in html
    assert 'data-status="running"' in html and "hx-trigger" in html


def test_it_shows_the_reply_when_the_turn_is_done(admin_client):
    turn = submit()
    reply = answer(
        turn,
        "<claude>thinking <say>I'm **here**, *really*.</say>"
        "<do><script src=x>alert(1)</script> waves</do></claude>",
    )
    html = turn_detail(admin_client, turn).text
    assert f'<article class="message companion" id="event-{reply.pk}" data-identity="claude"' in (
        html
    )
    assert '<div class="segment say">I&#x27;m <strong>here</strong>, <em>really</em>.</div>' in (
        html
    )
    assert "&lt;script src=x&gt;alert(1) waves" in html
    assert "<script>" not in html and "thinking" not in html and "hx-trigger" not in html


def test_it_hides_a_secret_reply_completely(admin_client):
    turn = submit()
    answer(turn, "<claude><feeling>quiet</feeling>not for the page</claude>")
    html = turn_detail(admin_client, turn).text.strip()
    assert html == (
        f'<article class="message companion secret" id="turn-{turn.pk}" '
        f'data-turn="{turn.pk}" hidden></article>'
    )


def test_it_offers_a_retry_for_a_failed_turn(admin_client):
    turn = submit()
    Turn.objects.filter(pk=turn.pk).update(status="error", error="Claude is overloaded <right now>")
    html = turn_detail(admin_client, turn).text
    assert f'<article class="message companion failed" id="turn-{turn.pk}"' in html
    assert "Claude is overloaded &lt;right now&gt;" in html
    retry = reverse("heart-turn-retry", args=[turn.pk])
    assert f'hx-post="{retry}" hx-target="closest article" hx-swap="outerHTML"' in html
    assert f'action="{retry}"' in html and "hx-trigger" not in html


def test_it_answers_404_for_an_unknown_turn(admin_client):
    assert admin_client.get(reverse("heart-turn-detail", args=[999])).status_code == 404
    assert admin_client.post(reverse("heart-turn-retry", args=[999])).status_code == 404


# --- Retry --------------------------------------------------------------------------------------


@pytest.fixture
def queued_tasks(monkeypatch):
    calls = []
    monkeypatch.setattr(services, "async_task", lambda *args, **kwargs: calls.append(args))
    return calls


def test_it_retries_a_failed_turn(admin_client, queued_tasks):
    turn = submit()
    Turn.objects.filter(pk=turn.pk).update(status="error", error="overloaded")
    response = admin_client.post(reverse("heart-turn-retry", args=[turn.pk]), headers=HTMX)
    assert response.status_code == 200
    assert f'<article class="message companion pending" id="turn-{turn.pk}"' in response.text
    assert Turn.objects.get(pk=turn.pk).status == "queued"
    assert queued_tasks == [("heart.tasks.run_turns_task", turn.pk)]


def test_it_refuses_to_retry_a_turn_that_has_not_failed(admin_client, queued_tasks):
    turn = submit()
    response = admin_client.post(reverse("heart-turn-retry", args=[turn.pk]), headers=HTMX)
    assert response.status_code == 409
    assert "has not failed" in response.text
    assert queued_tasks == []


def test_it_retries_from_a_plain_form_and_goes_back_to_the_page(admin_client, queued_tasks):
    turn = submit()
    Turn.objects.filter(pk=turn.pk).update(status="error", error="overloaded")
    response = admin_client.post(reverse("heart-turn-retry", args=[turn.pk]))
    assert response.status_code == 303 and response.url == reverse("heart-chat")
    assert Turn.objects.get(pk=turn.pk).status == "queued"


# --- The worker dot -----------------------------------------------------------------------------


def cluster_running():
    """Record a running cluster the way django-q2's sentinel does: a signed stat in the broker."""
    status = Status(pid=4242, cluster_id="test-cluster")
    status.status = "Idle"
    get_broker().set_stat(Stat.get_key("test-cluster"), SignedPackage.dumps(status, True), 30)


def worker_dot(client):
    response = client.get(reverse("heart-worker-status"), headers=HTMX)
    assert response.status_code == 200
    return response.text


def test_it_shows_the_worker_offline_without_a_cluster(admin_client):
    html = worker_dot(admin_client)
    assert html.startswith('<span id="worker-status" class="worker-status" data-state="offline"')
    assert 'hx-get="/worker/" hx-trigger="every 3s" hx-swap="outerHTML"' in html
    assert "qcluster" in html
    # Said beside the dot, not only in a tooltip a phone cannot hover.
    assert '<span class="worker-words">worker stopped</span>' in html


def test_it_says_the_worker_cannot_go_on_when_the_disk_is_full(admin_client, monkeypatch):
    monkeypatch.setattr(disks, "free_bytes", lambda folder: 4096)

    html = worker_dot(admin_client)

    assert 'data-state="offline"' in html
    assert (
        "The worker cannot go on: the disk holding Silentstar&#x27;s data is full. Free some "
        "space and it carries on by itself." in html
    )


def test_it_shows_the_worker_online_with_a_cluster(admin_client):
    cluster_running()
    assert len(Stat.get_all()) == 1
    html = worker_dot(admin_client)
    assert 'data-state="online"' in html
    assert '<span class="worker-words visually-hidden">The worker is ready</span>' in html


def test_it_shows_the_worker_busy_while_a_turn_runs(admin_client):
    cluster_running()
    turn = submit()
    Turn.objects.filter(pk=turn.pk).update(status="running")
    assert 'data-state="busy"' in worker_dot(admin_client)


def test_it_shows_the_worker_online_when_tasks_run_in_the_web_process(admin_client, settings):
    settings.Q_CLUSTER = {**settings.Q_CLUSTER, "sync": True}
    assert 'data-state="online"' in worker_dot(admin_client)


# --- Installing the app -------------------------------------------------------------------------


def test_it_serves_the_manifest_to_anyone(client, static_dir):
    response = client.get(reverse("heart-manifest"))
    assert response.status_code == 200
    assert response["Content-Type"] == "application/manifest+json"
    assert response.json() == {"name": "silentstar"}


def test_it_serves_the_service_worker_to_anyone(client, static_dir):
    response = client.get(reverse("heart-service-worker"))
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/javascript")
    assert response["Service-Worker-Allowed"] == "/"
    assert response.content == (static_dir / "heart" / "sw.js").read_bytes()


def test_it_answers_404_while_the_app_files_are_missing(client, settings, tmp_path):
    settings.STATICFILES_DIRS = [tmp_path]
    assert client.get(reverse("heart-manifest")).status_code == 404
    assert client.get(reverse("heart-service-worker")).status_code == 404


# --- A full disk or read-only data ----------------------------------------------------------------

EVENT_FILLER = "INSERT INTO heart_event (ts, content, actor, image) VALUES (%s, '', '', '')"
NOT_SENT_FULL = (
    "Not sent: the disk holding Silentstar's data is full. Free some space and send again; "
    "your text is still here."
)
NOT_SENT_READ_ONLY = (
    "Not sent: Silentstar's data is read-only, so nothing can be written. Make the data folder "
    "(or the database) writable and send again; your text is still here."
)


def events_full():
    return store_full("events", table="heart_event", filler=EVENT_FILLER)


def events_read_only():
    return store_read_only("events", table="heart_event")


def composer_said(response) -> str:
    """The composer's sentence in a refusal, as the chat's script shows it (``.composer-error``)."""
    found = re.fullmatch(r'<p class="composer-error" role="alert">(.*)</p>', response.text.strip())
    assert found, response.text
    return html.unescape(found.group(1))


def test_it_says_read_only_data_in_the_composer_and_logs_nothing(admin_client):
    with events_read_only():
        response = send(admin_client, message="hello", identity="luna")
    assert response.status_code == 503
    assert composer_said(response) == NOT_SENT_READ_ONLY
    assert not Event.objects.exists() and not Turn.objects.exists()


def test_it_says_a_full_disk_met_by_the_image_and_keeps_no_part_of_it(
    admin_client, settings, monkeypatch
):
    def full(storage, name, content):
        path = Path(storage.path(name))
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content.read(10))  # cut short, as a full disk cuts a write
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(FileSystemStorage, "_save", full)
    response = send(admin_client, message="look", image=SimpleUploadedFile("a.png", png()))
    assert response.status_code == 507
    assert composer_said(response) == NOT_SENT_FULL
    assert stored_files(settings) == [] and not Event.objects.exists()


def test_it_says_when_a_message_reached_the_log_before_the_disk_filled(admin_client, monkeypatch):
    def full(**kwargs):
        raise as_django_wraps(
            sqlite_error(
                pragma="PRAGMA max_page_count = 2",
                statement="INSERT INTO t VALUES (zeroblob(100000))",
            )
        )

    monkeypatch.setattr(services, "working_memory_ingest", full)
    response = send(admin_client, message="hello", identity="luna")
    assert response.status_code == 507
    assert composer_said(response) == (
        "Your message is in the log, but its answer could not be queued: the disk holding "
        "Silentstar's data is full. Free some space; do not send it again."
    )
    assert Event.objects.get().content == "<luna>hello</luna>"


# A full SQLite store rolls back the whole transaction it was in, the test's too: on SQLite
# these tests commit, and the append-only triggers are lifted around their class so the tables
# can be emptied after each (``event_log_triggers_lifted``). PostgreSQL rolls back only the
# statement, and its four aliases share one database, which one serialised rollback restores.
SQLITE = connections["events"].vendor == "sqlite"
FULL_DISK_DB = pytest.mark.django_db(
    databases="__all__", transaction=SQLITE, serialized_rollback=SQLITE
)


@pytest.fixture(scope="class")
def triggers_lifted_for_the_class(django_db_setup, django_db_blocker):
    with event_log_triggers_lifted(django_db_blocker):
        yield


@pytest.mark.usefixtures("triggers_lifted_for_the_class")
class TestAFullDisk:
    @FULL_DISK_DB
    def test_it_says_a_full_disk_in_the_composer_and_logs_nothing(self, admin_client):
        with events_full():
            logged = Event.objects.count()
            response = send(admin_client, message="hello", identity="luna")
            assert Event.objects.count() == logged
        assert response.status_code == 507
        assert composer_said(response) == NOT_SENT_FULL
        assert not Turn.objects.exists()

    @FULL_DISK_DB
    def test_it_says_a_full_disk_on_the_page_after_a_plain_form_post(self, admin_client):
        with events_full():
            response = send(admin_client, htmx=False, message="no script here", identity="chloe")
        assert response.status_code == 303
        page = html.unescape(admin_client.get(response.url).text)
        assert f'<p class="composer-error" role="alert">{NOT_SENT_FULL}</p>' in page

    @FULL_DISK_DB
    def test_it_shows_a_turn_stopped_by_a_full_disk_in_words_and_the_worker_carries_on(
        self, admin_client
    ):
        turn = submit()
        with events_full():
            assert run_turns_task(turn.pk) == [
                turn.pk
            ]  # the task ends as usual: the worker goes on
        turn.refresh_from_db()
        assert (turn.status, turn.error) == (
            "error",
            "Not finished: the disk holding Silentstar's data is full. Free some space and retry.",
        )
        page = html.unescape(turn_detail(admin_client, turn).text)
        assert f'<p class="reason" role="alert">{turn.error}</p>' in page


# --- corrections -------------------------------------------------------------------------------


def correct(client, event_id: int, **data):
    return client.post(reverse("heart-event-correct", args=[event_id]), data)


def article_of(html: str, event_id: int) -> str:
    start = html.rindex("<article", 0, html.index(f'id="event-{event_id}"'))
    return html[start : html.index("</article>", start)]


@pytest.fixture
def said():
    turn = submit("<luna>my sister Mara phoned</luna>")
    answer(turn, "<say>How is she?</say>")
    return turn


def test_an_edit_from_the_chat_shows_the_new_words_and_the_first_ones_a_tap_away(
    admin_client, said
):
    response = correct(admin_client, said.event_id, kind="edit", text="my sister Maren phoned")

    assert response.status_code == 303
    assert response["Location"] == f"/#event-{said.event_id}"
    shown = article_of(admin_client.get("/").text, said.event_id)
    assert '<div class="segment say">my sister Maren phoned</div>' in shown
    assert '<span class="corrected">· edited</span>' in shown
    assert '<summary>as first written</summary><div class="segment say">my sister Mara' in shown
    [correction] = Correction.objects.all()
    assert correction.text == "<luna>my sister Maren phoned</luna>"
    assert correction.made_by == "admin"


def test_a_message_given_to_another_identity_says_who_it_was_from(admin_client, said):
    correct(admin_client, said.event_id, kind="attribution", actor="renki")

    shown = article_of(admin_client.get("/").text, said.event_id)
    assert 'data-identity="renki"' in shown and '<span class="corrected">· was luna</span>' in shown


def test_a_message_taken_back_shows_no_words_but_a_tap_to_them_and_to_restore_it(
    admin_client, said
):
    correct(admin_client, said.event_id, kind="retraction")

    shown = article_of(admin_client.get("/").text, said.event_id)
    assert 'class="message user retracted"' in shown and "· taken back" in shown
    assert '<div class="segment say">' not in shown.split("<details")[0]
    assert "<summary>what it said</summary>" in shown
    assert 'value="restoration"' in shown and 'value="edit"' not in shown


def test_a_correction_that_cannot_be_made_is_said_in_the_chat(admin_client, said):
    response = correct(admin_client, said.event_id, kind="edit", text="my sister Mara phoned")

    assert response.status_code == 303
    assert "already says that" in admin_client.get("/").text
    assert not Correction.objects.exists()
    refused = correct(admin_client, said.event_id, kind="erase")
    assert "“erase” is no correction" in admin_client.get("/").text
    assert refused.status_code == 303


def test_a_reply_is_edited_in_what_it_shows_and_keeps_what_it_did_not(admin_client):
    turn = submit()
    reply = answer(turn, "<claude>thinking <say>How is she?</say><feeling>warm</feeling></claude>")
    shown = article_of(admin_client.get("/").text, reply.pk)
    assert ">How is she?</textarea>" in shown and "thinking" not in shown

    correct(admin_client, reply.pk, kind="edit", text="How is your sister?")

    assert Correction.objects.get().text == (
        "<claude>thinking <say>How is your sister?</say><feeling>warm</feeling></claude>"
    )
    shown = article_of(admin_client.get("/").text, reply.pk)
    assert '<div class="segment say">How is your sister?</div>' in shown and "· edited" in shown


def test_the_owner_purges_a_message_taken_back_after_seeing_what_it_reaches(
    admin_client, client, django_user_model, said
):
    correct(admin_client, said.event_id, kind="retraction")
    assert "Purge its text…" in article_of(admin_client.get("/").text, said.event_id)
    url = reverse("heart-event-purge", args=[said.event_id])

    page = admin_client.get(url).text

    assert "Purge message #" in page and "backups and exports already made" in page
    response = admin_client.post(url)
    assert response.status_code == 303
    assert Event.objects.get(pk=said.event_id).content == ""
    assert "is purged: its text is gone" in admin_client.get("/").text
    friend = django_user_model.objects.create_user("friend", password="x")
    client.force_login(friend)
    assert client.get(url).status_code == 403


def test_a_message_not_taken_back_is_not_purged(admin_client, said):
    response = admin_client.post(reverse("heart-event-purge", args=[said.event_id]))

    assert response.status_code == 303
    assert "not taken back: take it back first" in admin_client.get("/").text
    assert Event.objects.get(pk=said.event_id).content == "<luna>my sister Mara phoned</luna>"


def test_asking_again_while_the_worker_is_stopped_says_so_where_the_person_looks(
    admin_client, said
):
    newest = Turn.objects.order_by("-pk").first()

    response = admin_client.post(reverse("heart-turn-again", args=[newest.pk]))

    assert response.status_code == 303
    assert Turn.objects.filter(again_of=newest, status="queued").exists()
    assert "Asked again. The worker is not running: messages wait until it starts" in (
        admin_client.get("/").text
    )
    refused = admin_client.post(reverse("heart-turn-again", args=[newest.pk]))
    assert refused.status_code == 303
    assert "answering that message again already" in admin_client.get("/").text


def test_a_correction_says_which_items_it_wrote_stay_because_a_person_changed_them(admin_client):
    turn = submit("<luna><pin>the gate code is 1234</pin></luna>")
    answer(turn, "<say>Noted.</say>")
    pin = WorkingMemory.objects.get(type="pin")
    working_memory_update(item_id=pin.pk, at=timezone.now(), content="the gate code: 1234#")

    correct(admin_client, turn.event_id, kind="retraction")

    assert (
        f"Working memory it wrote was changed since, so it stays as it is: item #{pin.pk}."
        in admin_client.get("/").text
    )
    assert WorkingMemory.objects.get(pk=pin.pk).status == "active"
