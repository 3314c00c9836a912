import re
import uuid

import pytest
from axes.models import AccessAttempt, AccessFailureLog, AccessLog
from django.apps import apps
from django.contrib import admin
from django.contrib.auth.models import Group, Permission
from django.contrib.contenttypes.models import ContentType
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.test import RequestFactory
from django.urls import URLPattern, URLResolver, get_resolver, resolve, reverse
from django.utils import timezone
from django_q.models import OrmQ, Schedule, Task

from compass.models import Consultation
from events.models import Event, Nudge, Turn
from gem.access import REFUSAL
from gem.models import (
    AmbientProse,
    Forgotten,
    Fragment,
    FragmentEdge,
    FragmentSource,
    IngestRecord,
    MiraEntry,
    State,
    WorkingMemory,
    WorkingMemoryRef,
    WorkingMemorySource,
)
from heart.models import ContextSnapshot, PushDelivery, PushSubscription
from heart.services import turn_submit
from ledger.models import ModelCall
from loom.models import InboxImage, LoomCall, LoomPrompt, Session, SessionImage
from mirror.models import MirrorRun, Summary, TagSuggestion
from transfer.models import ImportedProposal, ImportRun

pytestmark = pytest.mark.django_db(databases="__all__")


def test_it_answers_with_the_login_page(client):
    response = client.get(reverse("login"))
    assert response.status_code == 200
    assert b"Sign in" in response.content


def test_it_sends_visitors_who_are_not_signed_in_to_the_login_page(client):
    response = client.get("/")
    assert response.status_code == 302
    assert response.url.startswith(reverse("login"))


def test_it_serves_static_files_without_signing_in(client):
    response = client.get("/static/css/login.css")
    assert response.status_code == 200


# The Anvil's pages register when the URLs are first read (anvil/apps.py): read here, before
# any request, for the tests that list them.
admin.autodiscover()


@pytest.mark.parametrize("model", list(admin.site._registry), ids=lambda m: m._meta.label)
def test_it_lists_every_model_in_the_admin_with_search(admin_client, model):
    url = reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_changelist")
    response = admin_client.get(url, {"q": "fairy"})
    assert response.status_code == 200


def test_it_registers_every_project_model_in_the_admin():
    for app in ("heart", "gem", "mirror"):
        for model in apps.get_app_config(app).get_models():
            assert model in admin.site._registry, model


@pytest.mark.parametrize(
    "url",
    [
        "/accounts/password_reset/",
        "/accounts/password_reset/done/",
        "/accounts/reset/MQ/set-password/",
        "/accounts/reset/done/",
    ],
)
def test_it_offers_no_password_reset_by_mail(client, url):
    assert client.get(url).status_code == 404
    assert client.post(url, {"email": "mono@example.org"}).status_code == 404


def test_it_changes_the_password_of_the_signed_in_user(client, django_user_model):
    user = django_user_model.objects.create_user(username="mono", password="the old password")
    client.force_login(user)
    assert client.get(reverse("password_change")).status_code == 200
    response = client.post(
        reverse("password_change"),
        {
            "old_password": "the old password",
            "new_password1": "a new and longer password",
            "new_password2": "a new and longer password",
        },
    )
    assert response.status_code == 302 and response.url == reverse("password_change_done")
    assert client.get(response.url).status_code == 200
    user.refresh_from_db()
    assert user.check_password("a new and longer password")


def test_it_changes_no_password_without_the_old_one(client, django_user_model):
    user = django_user_model.objects.create_user(username="mono", password="the old password")
    client.force_login(user)
    response = client.post(
        reverse("password_change"),
        {
            "old_password": "a guess",
            "new_password1": "a new and longer password",
            "new_password2": "a new and longer password",
        },
    )
    assert response.status_code == 200
    user.refresh_from_db()
    assert user.check_password("the old password")


def test_it_sends_visitors_who_are_not_signed_in_from_the_password_change_to_sign_in(client):
    for url in (reverse("password_change"), reverse("password_change_done")):
        response = client.get(url)
        assert response.status_code == 302
        assert response.url.startswith(reverse("login"))


def test_it_signs_out(admin_client):
    response = admin_client.post(reverse("logout"))
    assert response.status_code == 302 and response.url == reverse("login")
    assert admin_client.get("/").status_code == 302


@pytest.mark.django_db(databases="__all__")
def test_the_event_logs_old_addresses_in_the_anvil_lead_to_the_new_ones(admin_client):
    event = Event.objects.create(content="hello", actor="luna")
    response = admin_client.get(f"/admin/heart/event/{event.pk}/change/?x=1")
    assert response.status_code == 301
    assert response["Location"] == f"/admin/events/event/{event.pk}/change/?x=1"
    assert admin_client.get(response["Location"]).status_code == 200
    assert admin_client.get("/admin/heart/turn/").status_code == 301
    assert admin_client.get("/admin/heart/contextsnapshot/").status_code == 200


# --- Who may read the memory: every address the project serves, crawled ----------------------

# Every route is crawled but these, which hold nothing of the memory and answer any account the
# same. Static files are served by WhiteNoise before any route, and there is no health check.
OPEN_TO_EVERY_ACCOUNT = {
    "accounts/login/": "the sign-in page, which comes before any account",
    "admin/login/": "the admin's sign-in (two routes: ours, then the admin's own, which it "
    "hides), leading to the one above",
    "accounts/logout/": "signing out, which every account may do",
    "admin/logout/": "the admin's signing out; crawling it would end the crawl's session",
    "accounts/password_change/": "an account's own password, not the memory",
    "accounts/password_change/done/": "the page after it",
    "manifest.webmanifest": "the web app's manifest, fetched before anyone signs in",
    "sw.js": "the service worker, fetched before anyone signs in",
}
# What the routes with arguments are given, beyond rows' ids.
ROUTE_ARGUMENTS = {"app_label": "gem", "url": "gem/fragment", "rest": "event/"}
QUERIES = {
    "admin/autocomplete/": "?app_label=gem&model_name=fragmentedge&field_name=target",
    "history/": "?before={event_id}",
    "lens/connect/": "?keys=fairy+well",
    "admin/loom/loomcall/ask/": "?key={key}",
}
# The admin's "view on site" link answers only for models with a page of their own outside the
# admin; none has one, so it answers 404 to everyone it lets in.
NOT_FOUND_FOR_EVERYONE = {"admin/r/<path:content_type_id>/<path:object_id>/"}
# Routes that answer only POST, and what the crawl posts to them as a person would.
POSTS = {
    "messages/": {"message": "hello from the crawl", "identity": "luna"},
    "turns/<int:turn_id>/retry/": {},
    "turns/<int:turn_id>/again/": {},
    "turns/<int:turn_id>/choose/": {},
    "events/<int:event_id>/correct/": {"kind": "retraction"},
    "setup/skip/": {},
    "admin/compass/consultation/<int:consultation_id>/decide/": {},
    "admin/compass/consultation/<int:consultation_id>/retry/": {},
    "admin/loom/session/<int:session_id>/fragments/": {"key": "well"},
    "admin/loom/session/<int:session_id>/take/": {},
    "admin/loom/session/<int:session_id>/call/": {},
    "admin/loom/session/<int:session_id>/close/": {},
    "admin/loom/loomcall/<int:call_id>/apply/": {},
    "admin/loom/loomcall/<int:call_id>/drop/": {},
    "admin/loom/loomcall/<int:call_id>/retry/": {},
    "admin/loom/loomcall/<int:call_id>/again/": {},
    "admin/transfer/importrun/import/": {},
    "admin/transfer/importedproposal/<int:proposal_id>/apply/": {},
    "admin/transfer/importedproposal/<int:proposal_id>/drop/": {},
    "admin/gem/fragment/<path:key>/trigger/": {"trigger": "the old well"},
    "notifications/subscribe/": {
        "endpoint": "https://push.example.invalid/send/crawl",
        "p256dh": "BA" + "A" * 85,
        "auth": "A" * 22,
    },
    "notifications/remove/": {"device": "1"},
    "admin/memory/items/<int:item_id>/forget/": {},
    "admin/memory/items/<int:item_id>/edit/": {"content": "tea at six"},
    "admin/memory/suggestions/<int:suggestion_id>/decide/": {"decision": "reject"},
    "admin/memory/writing-first/": {"reasons": ["silence"]},
}
# Pages for the owner alone, whatever the memory permission grants.
OWNER_ONLY = {"events/<int:event_id>/purge/": "purging a message taken back"}
WORKS = {200, 201, 301, 302, 303}  # a page, a partial, a message sent, or a redirect


def served_routes() -> list[tuple[str, URLPattern]]:
    """Every route of the URL table, with the pattern that answers it."""

    def walk(patterns, prefix: str):
        for pattern in patterns:
            if isinstance(pattern, URLResolver):
                yield from walk(pattern.url_patterns, prefix + str(pattern.pattern))
            else:
                yield prefix + str(pattern.pattern), pattern

    return list(walk(get_resolver().url_patterns, ""))


def crawled_routes() -> list[tuple[str, URLPattern]]:
    return [
        (route, pattern) for route, pattern in served_routes() if route not in OPEN_TO_EVERY_ACCOUNT
    ]


def model_of(route: str):
    """The model an admin route is about (``admin/<app>/<model>/…``), if it is about one."""
    parts = route.split("/")
    if parts[0] != "admin" or len(parts) < 3:
        return None
    try:
        return apps.get_model(parts[1], parts[2])
    except (LookupError, ValueError):
        return None


def url_of(route: str, *, rows) -> str:
    """The route with each argument filled from a real row, as a browser would ask for it."""

    def argument(name: str, route: str) -> str:
        if name in ROUTE_ARGUMENTS:
            return ROUTE_ARGUMENTS[name]
        if name == "content_type_id":
            return str(ContentType.objects.get_for_model(Fragment).pk)
        if name in rows:
            return str(rows[name])
        model = model_of(route) or Fragment
        row = model._default_manager.order_by("pk").first()
        assert row is not None, f"the crawl has no {model._meta.label} row for {route}"
        return str(row.pk)

    def regex_groups_filled(text: str) -> str:
        out, position = [], 0
        for start in [m.start() for m in re.finditer(r"\(\?P<", text)]:
            if start < position:
                continue
            name = text[start + 4 : text.index(">", start)]
            depth, end = 0, start
            for end in range(start, len(text)):
                depth += {"(": 1, ")": -1}.get(text[end], 0)
                if depth == 0:
                    break
            out.append(text[position:start] + argument(name, route))
            position = end + 1
        return "".join(out) + text[position:]

    path = regex_groups_filled(route).replace("^", "").replace("$", "")
    path = re.sub(r"<(?:\w+:)?(\w+)>", lambda m: argument(m[1], route), path)
    return "/" + path + QUERIES.get(route, "").format(**rows)


@pytest.fixture
def rows(settings, tmp_path):
    """One real row of each thing the pages show, and the ids the routes are given."""
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.COMPANION_OFFLINE = True
    image = default_storage.save("images/crawl.png", ContentFile(b"\x89PNG\r\n\x1a\n"))
    with_image = Event.objects.create(content="look", actor="luna", image=image)
    turn = turn_submit(
        text="<luna>hello <pin>tea at five</pin></luna>", actor="luna", enqueue=False
    )
    Turn.objects.filter(pk=turn.pk).update(status="error", error="overloaded")
    ContextSnapshot.objects.create(
        turn=turn.pk, assembled_system="who Claude is", assembled_user="hello"
    )
    fairy = Fragment.objects.create(key="fairy", ambient="A small light.")
    well = Fragment.objects.create(key="well", ambient="Deep and cold.")
    FragmentEdge.objects.create(source=fairy, target=well, relation="near")
    FragmentSource.objects.create(fragment=fairy, event_id=turn.event_id)
    item = WorkingMemory.objects.get()
    WorkingMemoryRef.objects.create(wm=item, fragment=fairy)
    WorkingMemorySource.objects.get_or_create(wm=item, event_id=turn.event_id)
    MiraEntry.objects.create(mira_id="mem_001", working_memory=item, entry={}, written={})
    AmbientProse.objects.create(content="Quiet evenings.")
    State.objects.get_or_create(key="crawl", defaults={"value": "1"})
    Forgotten.objects.create(type="pin", content="an old code", source="working memory #9")
    IngestRecord.objects.get_or_create(event_id=turn.event_id)
    run = MirrorRun.objects.create(kind="manual")
    summary = Summary.objects.create(
        level="L0", first_event_id=turn.event_id, last_event_id=turn.event_id, content="…", run=run
    )
    TagSuggestion.objects.create(summary=summary, type="pin", content="tea")
    Nudge.objects.create(reason="silence", thing="silence after event 1", said="a long silence")
    Consultation.objects.create(question="what should this week hold", status="failed")
    session = Session.objects.create(topic="the crawl")
    session.fragments.add(fairy)
    InboxImage.objects.create(image=default_storage.save("loom/inbox/crawl.png", ContentFile(b"")))
    photo = SessionImage.objects.create(
        session=session,
        image=default_storage.save("loom/sessions/crawl.png", ContentFile(b"\x89PNG\r\n")),
        uploaded_at=timezone.now(),
    )
    LoomCall.objects.create(
        session=session, agent="weaver", fragment_key="fairy", status="failed", error="overloaded"
    )
    LoomPrompt.objects.create(kind="weaver", content="Look for edges.")
    arrived = ImportRun.objects.create(format="mem0", file_name="crawl.json", file_sha256="0" * 64)
    proposal = ImportedProposal.objects.create(
        kind="draft", digest="1" * 64, run=arrived, title="1 fragment", text="# crawl\n"
    )
    ModelCall.objects.create(
        ts=timezone.now(),
        component="heart",
        model="claude-opus-5-5",
        input_tokens=900,
        output_tokens=40,
        cache_read_tokens=1200,
        cache_write_5m_tokens=300,
        cache_write_1h_tokens=0,
    )
    device = PushSubscription.objects.create(
        endpoint="https://push.example.invalid/send/1", p256dh="B", auth="A", device="crawl"
    )
    PushDelivery.objects.create(subscription=device, ref="nudge:1")
    Group.objects.create(name="readers")
    Schedule.objects.create(name="crawl", func="math.floor", schedule_type=Schedule.ONCE)
    for success in (True, False):
        Task.objects.create(
            id=uuid.uuid4().hex,
            name=f"crawl {success}",
            func="math.floor",
            started=timezone.now(),
            stopped=timezone.now(),
            success=success,
        )
    OrmQ.objects.create(key="default", payload="", lock=timezone.now())
    at = {"user_agent": "crawl", "ip_address": "10.0.0.1", "attempt_time": timezone.now()}
    AccessAttempt.objects.create(username="guess", failures_since_start=1, **at)
    AccessLog.objects.create(username="guess", **at)
    AccessFailureLog.objects.create(username="guess", **at)
    return {
        "turn_id": turn.pk,
        "event_id": with_image.pk,
        "key": fairy.key,
        "photo_id": photo.pk,
        "proposal_id": proposal.pk,
        "item_id": item.pk,
        "suggestion_id": TagSuggestion.objects.get().pk,
    }


def refused_for_the_memory(response) -> bool:
    return response.status_code == 403 and REFUSAL in response.text


def test_it_crawls_every_route_but_the_few_open_to_every_account(rows, admin_user):
    routes = [route for route, _ in served_routes()]
    assert set(OPEN_TO_EVERY_ACCOUNT) <= set(routes)
    crawled = crawled_routes()
    assert {"", "lens/", "admin/", "admin/costs/", "images/<int:event_id>/"} <= {
        route for route, _ in crawled
    }
    missed = [
        route
        for route, pattern in crawled
        if resolve(url_of(route, rows=rows).split("?")[0]).func is not pattern.callback
    ]
    assert missed == []


@pytest.mark.parametrize("staff", [False, True], ids=["plain-account", "staff-account"])
def test_it_refuses_every_page_to_an_account_without_the_memory_permission(
    client, django_user_model, rows, staff
):
    stranger = django_user_model.objects.create_user("stranger", password="x", is_staff=staff)
    client.force_login(stranger)
    answered = {}
    for route, _ in crawled_routes():
        url = url_of(route, rows=rows)
        answered[url] = (client.get(url), client.post(url, POSTS.get(route, {})))
    not_refused = [
        f"{method} {url}: {response.status_code}"
        for url, responses in answered.items()
        for method, response in zip(("GET", "POST"), responses, strict=True)
        if not refused_for_the_memory(response)
    ]
    assert not_refused == []
    assert Event.objects.count() == 2 and Turn.objects.get().status == "error"


@pytest.fixture
def granted(django_user_model):
    """An account the owner gave the memory permission, staff status and every permission of
    the Anvil's pages but those over accounts (``auth``), which stay the owner's."""
    account = django_user_model.objects.create_user("friend", password="x", is_staff=True)
    account.user_permissions.set(Permission.objects.exclude(content_type__app_label="auth"))
    return account


@pytest.mark.parametrize("who", ["owner", "granted"])
def test_it_opens_every_page_to_the_owner_and_to_a_granted_account(
    client, django_user_model, rows, request, who
):
    account = (
        django_user_model.objects.create_superuser("owner", password="x")
        if who == "owner"
        else request.getfixturevalue("granted")
    )
    client.force_login(account)
    wrong = []
    for route, _ in crawled_routes():
        url = url_of(route, rows=rows)
        response = client.get(url)
        if response.status_code == 405:
            response = client.post(url, POSTS[route])
        if route in NOT_FOUND_FOR_EVERYONE:
            expected = {404}
        elif closed_by_the_anvils_own_rules(route, account) or (
            route in OWNER_ONLY and not account.is_superuser
        ):
            expected = {403}
        else:
            expected = WORKS
        if response.status_code not in expected or refused_for_the_memory(response):
            wrong.append(f"{url}: {response.status_code}")
    assert wrong == [], wrong


def closed_by_the_anvils_own_rules(route: str, account) -> bool:
    """Whether the admin's own permissions refuse ``account`` this page of a model: adding to
    the event log, say, or the pages over accounts for anyone but the owner. (A bare
    ``<object_id>/`` only redirects to the object's change page, which decides.)"""
    model_admin = admin.site._registry.get(model_of(route))
    if model_admin is None or route.endswith("<path:object_id>/"):
        return False
    asking = RequestFactory().get("/")
    asking.user = account
    if route.endswith("/add/"):
        return not model_admin.has_add_permission(asking)
    if route.endswith("/delete/"):
        return not model_admin.has_delete_permission(asking)
    if route.endswith("/password/"):
        return not model_admin.has_change_permission(asking)
    return not model_admin.has_view_or_change_permission(asking)


def test_the_owner_grants_the_memory_permission_on_the_users_page(admin_client, django_user_model):
    friend = django_user_model.objects.create_user("friend", password="x")
    page = admin_client.get(reverse("admin:auth_user_change", args=[friend.pk]))
    permission = Permission.objects.get(codename="use_memory")
    assert "Can read and write the memory" in page.text
    assert f'value="{permission.pk}"' in page.text
