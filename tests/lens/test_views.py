"""The Lens pages: a fragment, an intersection, working memory, summaries; owner only, GET only."""

import re
from contextlib import ExitStack
from urllib.parse import quote

import pytest
from django.db import connections
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from gem.models import Fragment, FragmentEdge, WorkingMemory, WorkingMemoryRef
from mirror.models import Summary

pytestmark = pytest.mark.django_db(databases="__all__")

PAGES = [
    reverse("lens-index"),
    reverse("lens-fragment-detail", args=["fairy"]),
    reverse("lens-fragment-draft", args=["fairy"]),
    reverse("lens-intersection-detail") + "?keys=fairy+well",
    reverse("lens-wm-list"),
    reverse("lens-summary-list"),
]


@pytest.fixture
def owner(client, django_user_model):
    user = django_user_model.objects.create_superuser(username="owner", password="x")
    client.force_login(user)
    return user


@pytest.fixture
def gem():
    fairy = Fragment.objects.create(
        key="fairy", ambient="A small light.", recognition="<b>not bold</b>\nsecond line"
    )
    well = Fragment.objects.create(key="well", ambient="Deep and cold.")
    moon = Fragment.objects.create(key="moon")
    Fragment.objects.create(key="lake")
    FragmentEdge.objects.create(source=fairy, target=well, relation="lives in")
    FragmentEdge.objects.create(source=moon, target=well, relation="")


@pytest.mark.parametrize("url", PAGES)
def test_logged_out_it_sends_to_the_login_page(client, gem, url):
    response = client.get(url)
    assert response.status_code == 302
    assert response["Location"] == f"{reverse('login')}?next={quote(url, safe='/')}"


@pytest.mark.parametrize("url", PAGES)
def test_it_only_answers_get(client, owner, gem, url):
    assert client.post(url).status_code == 405


def test_a_fragment_page_shows_every_tier_and_links_its_neighbours(client, owner, gem):
    response = client.get(reverse("lens-fragment-detail", args=["fairy"]))

    assert response.status_code == 200
    html = response.content.decode()
    assert "<h1>fairy</h1>" in html
    assert '<pre class="tier">&lt;b&gt;not bold&lt;/b&gt;\nsecond line</pre>' in html
    assert html.count('<p class="empty">empty</p>') == 1  # inventory
    well = reverse("lens-fragment-detail", args=["well"])
    assert f'<a href="{well}">well</a> <span class="relation">lives in</span>' in html
    assert '<p class="ambient-line">Deep and cold.</p>' in html
    assert reverse("lens-fragment-draft", args=["fairy"]) in html


def test_a_fragment_page_shows_its_triggers_and_no_section_without_them(client, owner, gem):
    Fragment.objects.filter(key="fairy").update(triggers=["wisp", "<the> light"])
    html = client.get(reverse("lens-fragment-detail", args=["fairy"])).content.decode()
    assert '<h2 id="triggers-heading">triggers</h2>' in html
    assert "<li>wisp</li><li>&lt;the&gt; light</li>" in html
    html = client.get(reverse("lens-fragment-detail", args=["well"])).content.decode()
    assert "triggers-heading" not in html


def test_a_fragment_page_shows_incoming_edges_too(client, owner, gem):
    html = client.get(reverse("lens-fragment-detail", args=["well"])).content.decode()
    assert html.count('class="arrow"') == 2
    assert f'<a href="{reverse("lens-fragment-detail", args=["moon"])}">moon</a>' in html


def test_an_unknown_fragment_is_a_404_naming_close_keys(client, owner, gem):
    response = client.get(reverse("lens-fragment-detail", args=["fairi"]))
    assert response.status_code == 404
    assert "No fragment “fairi” (did you mean fairy?)." in response.content.decode()


def test_the_draft_is_the_lens_markdown(client, owner, gem):
    response = client.get(reverse("lens-fragment-draft", args=["fairy"]))
    assert response["Content-Type"] == "text/markdown; charset=utf-8"
    assert response.content.decode().startswith("# fairy\n\n## ambient\n\nA small light.\n")


def test_the_key_box_opens_a_fragment_or_what_connects_several(client, owner, gem):
    one = client.get(reverse("lens-index"), {"keys": " fairy "})
    assert one["Location"] == reverse("lens-fragment-detail", args=["fairy"])

    several = client.get(reverse("lens-index"), {"keys": "fairy, moon"})
    assert several["Location"] == reverse("lens-intersection-detail") + "?keys=fairy+moon&depth=4"

    empty = client.get(reverse("lens-index"), {"keys": ""})
    assert empty.status_code == 400
    assert "Name a fragment key." in empty.content.decode()


def test_an_intersection_shows_the_paths_as_links(client, owner, gem):
    response = client.get(reverse("lens-intersection-detail"), {"keys": "fairy moon"})

    assert response.status_code == 200
    html = response.content.decode()
    link = reverse("lens-fragment-detail", args=["well"])
    assert (
        '<span class="hop">—<span class="relation">lives in</span>→</span>'
        f'<a href="{link}">well</a><span class="hop">←—</span>'
    ) in html
    assert "Nothing connects" not in html


def test_an_intersection_shows_the_triggers_of_the_fragments_on_the_way(client, owner, gem):
    Fragment.objects.filter(key="well").update(triggers=["the old well"])
    html = client.get(reverse("lens-intersection-detail"), {"keys": "fairy moon"}).content.decode()
    assert '<h3>triggers</h3><ul class="plain triggers"><li>the old well</li></ul>' in html
    assert html.count("<h3>triggers</h3>") == 1


def test_an_intersection_says_when_nothing_connects_them(client, owner, gem):
    response = client.get(reverse("lens-intersection-detail"), {"keys": "fairy lake", "depth": 2})
    html = response.content.decode()
    assert "Nothing connects them within 2 edges." in html
    assert "are not connected within 2 edges." in html


def test_an_intersection_refuses_unknown_keys_and_bad_depths(client, owner, gem):
    unknown = client.get(reverse("lens-intersection-detail"), {"keys": "fairy mon"})
    assert unknown.status_code == 404
    assert "No fragment “mon” (did you mean moon?)." in unknown.content.decode()

    deep = client.get(reverse("lens-intersection-detail"), {"keys": "fairy moon", "depth": 99})
    assert deep.status_code == 400
    assert "less than or equal to 8" in deep.content.decode()


def test_working_memory_shows_live_scores_and_linked_fragments(client, owner, gem):
    wm = WorkingMemory.objects.create(type="thought", content="the well again", turn=0)
    WorkingMemoryRef.objects.create(wm=wm, fragment_id="well")

    html = client.get(reverse("lens-wm-list")).content.decode()

    assert "1 active item, strongest first" in html
    assert f'<tr id="wm-{wm.pk}">' in html
    assert "the well again" in html
    assert f'<a href="{reverse("lens-fragment-detail", args=["well"])}">well</a>' in html
    assert '<meter min="0" max="1" value="1.0000"' in html  # just written: full strength


def test_summaries_come_newest_first(client, owner):
    Summary.objects.create(level="L0", first_event_id=1, last_event_id=30, content="Early.")
    Summary.objects.create(level="L1", first_event_id=1, last_event_id=90, content="Later.")

    html = client.get(reverse("lens-summary-list")).content.decode()

    assert html.index("events 1–90") < html.index("events 1–30")


def test_the_pages_only_ever_select(client, owner, gem):
    WorkingMemoryRef.objects.create(
        wm=WorkingMemory.objects.create(type="pin", content="x"), fragment_id="fairy"
    )
    Summary.objects.create(level="L0", first_event_id=1, last_event_id=2, content="s")
    with ExitStack() as stack:
        captured = [stack.enter_context(CaptureQueriesContext(connections[a])) for a in connections]
        for url in PAGES:
            assert client.get(url).status_code == 200, url

    queries = [q["sql"] for context in captured for q in context.captured_queries]
    assert len(queries) > 10
    assert [sql for sql in queries if not sql.lstrip().upper().startswith("SELECT")] == []


@pytest.mark.parametrize("key", ["y'lhara", "café", "star-light_2"])
def test_any_valid_key_has_a_page(client, owner, key):
    Fragment.objects.create(key=key, ambient="Here.")
    url = reverse("lens-fragment-detail", args=[key])
    assert f"<h1>{key}</h1>".replace("'", "&#x27;") in client.get(url).content.decode()
    assert client.get(reverse("lens-index"), {"keys": key})["Location"] == url


def test_the_index_lists_every_fragment_and_the_key_box_completes_keys(client, owner, gem):
    page = client.get(reverse("lens-index")).text
    assert "4 fragments" in page
    keys = re.findall(r'<li><a href="/lens/fragments/([^/"]+)/">', page)
    assert keys == ["fairy", "lake", "moon", "well"]
    assert '<span class="muted">A small light.</span>' in page
    assert '<datalist id="lens-key-list"><option value="fairy"><option value="lake">' in page
    assert 'list="lens-key-list"' in page


def test_the_index_pages_through_many_fragments(client, owner, monkeypatch):
    from lens import views

    monkeypatch.setattr(views, "INDEX_PAGE", 2)
    for key in ("a1", "b2", "c3"):
        Fragment.objects.create(key=key)
    first = client.get(reverse("lens-index")).text
    assert (
        "page 1 of 2" in first and 'rel="next"' in first and "c3" not in first.split("<section")[1]
    )
    second = client.get(reverse("lens-index"), {"page": 2}).text
    assert ">c3</a>" in second and 'rel="prev"' in second
