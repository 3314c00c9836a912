"""The first run: the set-up page (who talks here, the companion's name, the time zone), its
offer on the chat page, the ``{% first_run_offer %}`` tag and the companion's greeting
(``heart.first_run``, ``heart.views.setup``, ``heart.services.greeting_record``)."""

import pytest
from django.contrib.admin.models import LogEntry
from django.template import Context, Template
from django.test import RequestFactory
from django.urls import reverse
from django.utils.html import escape

from events.models import Event
from gem.models import Identity, WakeText, WakeTextKind
from gem.services import text_version_add
from gem.zone import owner_time_zone
from heart.first_run import OFFER_SET_ASIDE, greeting_compose
from heart.services import turn_submit
from tests.conftest import REPO

pytestmark = pytest.mark.django_db(databases="__all__")

OFFER = 'class="first-run-offer"'


def identity_post(rows, *, time_zone="Europe/Amsterdam", initial=None):
    """The set-up form as a browser posts it: ``rows`` of (id, name, side, colour, remove)."""
    data = {
        "identity-TOTAL_FORMS": str(len(rows)),
        "identity-INITIAL_FORMS": str(len(rows) if initial is None else initial),
        "identity-MIN_NUM_FORMS": "0",
        "identity-MAX_NUM_FORMS": "40",
        "time_zone": time_zone,
    }
    for n, (pk, name, side, color, remove) in enumerate(rows):
        data |= {
            f"identity-{n}-id": "" if pk is None else str(pk),
            f"identity-{n}-name": name,
            f"identity-{n}-side": side,
            f"identity-{n}-color": color,
        }
        if remove:
            data[f"identity-{n}-DELETE"] = "on"
    return data


def seeded_rows():
    return Identity.objects.order_by("id").values_list("id", "name", "side", "color")


def seeded():
    return [(pk, name, side, color, False) for pk, name, side, color in seeded_rows()]


def test_it_offers_the_set_up_on_the_chat_page_until_something_is_said(admin_client):
    html = admin_client.get(reverse("heart-chat")).text
    assert OFFER in html and f'href="{reverse("heart-setup")}"' in html

    turn_submit(text="<luna>hello</luna>", actor="luna", enqueue=False)
    assert OFFER not in admin_client.get(reverse("heart-chat")).text


def test_it_puts_the_offer_off_for_the_session_and_goes_back(admin_client):
    response = admin_client.post(reverse("heart-setup-skip"), {"next": "/admin/"})
    assert response.status_code == 303 and response.url == "/admin/"
    assert admin_client.session[OFFER_SET_ASIDE] is True
    assert OFFER not in admin_client.get(reverse("heart-chat")).text


def test_it_goes_back_to_the_chat_rather_than_to_another_site(admin_client):
    response = admin_client.post(reverse("heart-setup-skip"), {"next": "https://example.org/"})
    assert response.status_code == 303 and response.url == reverse("heart-chat")


def test_the_tag_renders_the_offer_or_nothing(rf: RequestFactory, client):
    template = Template("{% load first_run %}[{% first_run_offer %}]")
    request = rf.get("/admin/")
    request.session = client.session
    assert OFFER in template.render(Context({"request": request}))

    request.session[OFFER_SET_ASIDE] = True
    assert template.render(Context({"request": request})) == "[]"
    assert template.render(Context({})) == "[]"


def test_it_shows_the_identities_and_the_time_zone(admin_client, settings):
    settings.TIME_ZONE = "Europe/Lisbon"
    response = admin_client.get(reverse("heart-setup"))
    assert response.status_code == 200
    html = response.text
    names = [form["name"].value() for form in response.context["identities"].forms]
    assert names == ["hasuki", "renki", "luna", "chloe", "strah", "claude", "y'lhara", None]
    assert '<option value="Europe/Lisbon" selected>Lisbon</option>' in html
    assert 'data-zone-chosen="false"' in html
    assert '<script defer src="/static/heart/setup.js"></script>' in html


def test_it_saves_the_identities_and_the_time_zone(admin_client, admin_user):
    rows = seeded()
    luna = next(row for row in rows if row[1] == "luna")
    rows = [row for row in rows if row[1] not in ("chloe", "strah")]
    rows[rows.index(luna)] = (luna[0], "moon", "user", "#223344", False)
    rows.append((None, "wren", "user", "#556677", False))
    rows.append((None, "", "user", "#c4a882", False))  # the blank row, left as it came
    data = identity_post(rows, initial=len(rows) - 2)
    data["identity-0-DELETE"] = "on"  # hasuki goes too

    response = admin_client.post(reverse("heart-setup"), data)

    assert response.status_code == 303 and response.url == reverse("heart-chat")
    assert list(Identity.objects.order_by("id").values_list("name", flat=True)) == [
        "renki",
        "moon",
        "claude",
        "y'lhara",
        "wren",
    ]
    assert Identity.objects.get(name="moon").pk == luna[0]
    assert owner_time_zone() == "Europe/Amsterdam"
    assert LogEntry.objects.filter(user=admin_user, change_message="Added in the set-up.").exists()
    assert OFFER not in admin_client.get(reverse("heart-chat")).text
    assert 'data-zone-chosen="true"' in admin_client.get(reverse("heart-setup")).text


@pytest.mark.parametrize(
    ("row", "reason"),
    [
        ((None, "two words", "user", "#123456", False), "“two words” is not one word"),
        ((None, "Luna", "user", "#123456", False), "Two identities are called “Luna”"),
        ((None, "wren", "user", "red", False), "The colour of “wren” must be written #rrggbb."),
    ],
)
def test_it_refuses_a_bad_identity_in_words(admin_client, row, reason):
    before = list(Identity.objects.values_list("name", "color"))
    response = admin_client.post(reverse("heart-setup"), identity_post([*seeded(), row]))
    assert response.status_code == 400
    assert '<div class="problems" role="alert">' in response.text
    assert reason in response.content.decode()
    assert list(Identity.objects.values_list("name", "color")) == before


def test_it_refuses_an_unknown_time_zone_and_saves_nothing(admin_client, settings):
    settings.TIME_ZONE = "UTC"
    renamed = [(*row[:1], "moon" if row[1] == "luna" else row[1], *row[2:]) for row in seeded()]
    response = admin_client.post(
        reverse("heart-setup"), identity_post(renamed, time_zone="Mars/Olympus")
    )
    assert response.status_code == 400
    assert "“Mars/Olympus” is not a time zone this machine knows." in response.text
    assert Identity.objects.filter(name="luna").exists() and owner_time_zone() == "UTC"


def test_it_keeps_an_identity_for_each_side(admin_client):
    users_only = [row for row in seeded() if row[2] == "user"]
    response = admin_client.post(reverse("heart-setup"), identity_post(users_only))
    assert response.status_code == 400
    assert "Keep at least one identity for the companion." in response.text
    assert Identity.objects.filter(side="companion").count() == 2


def test_it_sends_the_signed_out_to_sign_in(client):
    for url in (reverse("heart-setup"), reverse("heart-setup-skip")):
        response = client.post(url)
        assert response.status_code == 302 and response.url.startswith(reverse("login"))


def test_it_takes_only_a_post_to_put_the_offer_off(admin_client):
    assert admin_client.get(reverse("heart-setup-skip")).status_code == 405
    assert admin_client.put(reverse("heart-setup")).status_code == 405


# --- A new installation: no identities until the set-up, then the companion's greeting -------

GREETING_SHIPPED = (REPO / "gem" / "defaults" / "greeting.md").read_text(encoding="utf-8").strip()


def first_rows(person="wren", companion="sable"):
    return identity_post(
        [
            (None, person, "user", "#556677", False),
            (None, companion, "companion", "#8b8ec8", False),
            (None, "", "user", "#c4a882", False),  # the blank row, left as it came
        ],
        initial=2,
    )


@pytest.mark.fresh_install
def test_a_new_installation_asks_for_the_persons_name_and_the_companions(admin_client):
    assert not Identity.objects.exists()
    response = admin_client.get(reverse("heart-setup"))
    forms = response.context["identities"].forms
    assert [(form["name"].value(), form["side"].value()) for form in forms] == [
        (None, "user"),
        (None, "companion"),
        (None, "user"),
    ]
    assert 'placeholder="your name"' in response.text
    assert 'placeholder="the companion&#x27;s name"' in response.text
    assert "the chat opens with the companion's greeting" in response.text
    assert f'href="{reverse("admin:gem_waketext_add")}?kind=greeting"' in response.text


@pytest.mark.fresh_install
def test_the_set_up_opens_the_chat_with_the_companions_greeting_once(admin_client):
    response = admin_client.post(reverse("heart-setup"), first_rows())

    assert response.status_code == 303 and response.url == reverse("heart-chat")
    assert list(Identity.objects.order_by("id").values_list("name", "side")) == [
        ("wren", "user"),
        ("sable", "companion"),
    ]
    said = GREETING_SHIPPED.replace("{name}", "sable")
    assert list(Event.objects.values_list("actor", "content")) == [
        ("sable", f"<sable><say>{said}</say></sable>")
    ]
    chat = admin_client.get(reverse("heart-chat")).text
    assert 'class="message companion"' in chat and 'data-identity="sable"' in chat
    assert escape(said) in chat
    assert OFFER not in chat

    again = [(pk, name, side, color, False) for pk, name, side, color in seeded_rows()]
    admin_client.post(reverse("heart-setup"), identity_post(again))
    assert Event.objects.count() == 1  # given once, not at each save


@pytest.mark.fresh_install
def test_the_greeting_is_the_one_written_in_the_anvil(admin_client, admin_user):
    text_version_add(
        model=WakeText,
        kind=WakeTextKind.GREETING,
        content="<do>looks up</do> <say>{name}, at last.</say>",
        author=admin_user,
    )
    admin_client.post(reverse("heart-setup"), first_rows(companion="ash"))
    assert Event.objects.get().content == "<ash><do>looks up</do> <say>ash, at last.</say></ash>"


@pytest.mark.fresh_install
def test_an_empty_greeting_greets_no_one(admin_client, admin_user):
    text_version_add(model=WakeText, kind=WakeTextKind.GREETING, content="  ", author=admin_user)
    response = admin_client.post(reverse("heart-setup"), first_rows())
    assert response.status_code == 303 and not Event.objects.exists()


def test_a_set_up_after_something_was_said_greets_no_one(admin_client):
    turn_submit(text="<luna>hello</luna>", actor="luna", enqueue=False)
    admin_client.post(reverse("heart-setup"), identity_post(seeded()))
    assert list(Event.objects.values_list("actor", flat=True)) == ["luna"]


@pytest.mark.fresh_install
def test_not_now_on_a_new_installation_speaks_as_nobody_in_particular(admin_client):
    admin_client.post(reverse("heart-setup-skip"))
    chat = admin_client.get(reverse("heart-chat")).text
    assert '<option value="">nobody in particular</option>' in chat

    admin_client.post(reverse("heart-message-send"), {"message": "hello", "identity": ""})
    first = Event.objects.order_by("id").values_list("actor", "content").first()
    assert first == ("", "hello")


def test_the_chat_reaches_the_set_up_after_the_first_run(admin_client):
    turn_submit(text="<luna>hello</luna>", actor="luna", enqueue=False)
    chat = admin_client.get(reverse("heart-chat")).text
    assert OFFER not in chat
    nav = chat[chat.index('<nav class="chat-nav"') : chat.index("</nav>")]
    assert f'href="{reverse("heart-setup")}">set-up</a>' in nav


@pytest.mark.parametrize(
    ("words", "said"),
    [
        ("Hello, I'm {name}.", "<sable><say>Hello, I'm sable.</say></sable>"),
        ("<do>waves</do> <say>hi</say>", "<sable><do>waves</do> <say>hi</say></sable>"),
        ("  \n", ""),
    ],
)
def test_a_greeting_is_said_by_the_companion_in_display_tags(words, said):
    assert greeting_compose(words, companion="sable") == said
