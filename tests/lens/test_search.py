"""Search over the FTS5 (SQLite) and tsvector (PostgreSQL) indexes the Lens's migration builds."""

from datetime import UTC, datetime, timedelta

import pytest
from django.db import connections
from hypothesis import assume, example, given
from hypothesis import strategies as st

from events.models import Event
from gem.models import Fragment, WorkingMemory
from heart.ingest import event_record
from lens.search import (
    DEFAULT_KINDS,
    KINDS,
    MARK_OPEN,
    NEIGHBOUR_FUSION,
    SEARCH_RECALL_HITS,
    STOP_WORDS,
    SearchError,
    _Filters,
    _neighbour_fusion,
    _with_neighbours,
    fts5_expression,
    query_terms,
    search,
    search_recalled,
)
from lens.snippet import snippet
from mirror.models import Summary
from silentstar.router import store_for

pytestmark = pytest.mark.django_db(databases="__all__")

START = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


def say(text, *, actor="luna", at=0):
    event, _ = event_record(text=text, actor=actor, ts=START + timedelta(hours=at), identities=[])
    return event


# --- query words (pure) ---------------------------------------------------------------------


def test_it_drops_common_words_and_keeps_the_rest_once():
    assert query_terms("What did Luna say about the Fairy, the fairy dress?") == [
        "luna",
        "fairy",
        "dress",
    ]


def test_it_keeps_common_words_when_nothing_else_is_left():
    assert query_terms("what was it") == ["what", "was", "it"]


@given(st.text(max_size=300))
@example("ΰ")  # folds into a letter and two combining marks
def test_it_makes_a_safe_expression_of_any_text(text):
    terms = query_terms(text)
    expression = fts5_expression(terms)
    assert all(term.isalnum() and term == term.casefold() for term in terms)
    assert expression.count('"') == 2 * len(terms)
    assert not terms or set(terms) - STOP_WORDS or set(terms) <= STOP_WORDS


def test_it_drops_light_verbs_and_the_s_of_a_possessive():
    assert query_terms("What indie act did Ana's cousin go to?") == [
        "indie",
        "act",
        "ana",
        "cousin",
    ]


# --- events ---------------------------------------------------------------------------------


def test_it_ranks_the_event_with_the_rarer_and_more_words_first():
    say("we had tea in the garden")
    best = say("the grey crewneck with the fairy stitch is drying by the window")
    say("the window was open all day")
    hits = search("fairy crewneck window", kinds=["event"])
    assert [hit.id for hit in hits][:1] == [best.pk]
    assert hits[0].score > hits[-1].score
    assert hits[0].kind == "event" and hits[0].ref == f"event:{best.pk}"


def test_it_finds_words_by_their_stem():
    named = say("We named the puppies Biscuit and Crumb")
    assert [hit.id for hit in search("puppy name", kinds=["event"])] == [named.pk]


def test_it_marks_the_matched_words_in_the_snippet_without_tag_markup():
    say("<claude><say>the lighthouse at dusk was beautiful</say></claude>", actor="claude")
    (hit,) = search("lighthouse", kinds=["event"])
    assert hit.snippet == f"the {MARK_OPEN}lighthouse{MARK_OPEN} at dusk was beautiful"
    assert "<say>" not in hit.snippet


LONG_TURN = (
    "We drove for hours. The road was empty: nothing but fields. Then the coast came into view "
    "and we stopped at a café. Later we walked along the cliffs until the lighthouses showed, "
    "white against the sky, and my sister said the lighthouse keeper still lives there. We "
    "stayed until dark."
)


@pytest.mark.parametrize("text", [LONG_TURN, f"{LONG_TURN} 🙂 best day"])
def test_it_gives_an_event_hit_the_passage_fts5_would(text):
    """Made from the hit's text as snippet() makes it (left to snippet() for the emoji)."""
    event = say(text)
    (hit,) = search("lighthouse keeper", kinds=["event"])
    assert hit.id == event.pk
    assert f"{MARK_OPEN}lighthouse" in hit.snippet
    assert len(hit.snippet) < len(text)
    connection = connections[store_for("heart", "event")]
    if connection.vendor == "sqlite":
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT snippet(lens_event_fts, 0, '**', '**', '…', 24) FROM lens_event_fts "
                "WHERE lens_event_fts MATCH %s AND rowid = %s",
                [fts5_expression(["lighthouse", "keeper"]), event.pk],
            )
            assert hit.snippet == cursor.fetchone()[0].replace("** **", " ")


def test_searching_makes_no_passage_and_reading_one_makes_the_fts5_one(monkeypatch):
    """A passage lens.snippet can cut is made when read (the search's callers that never show
    one do not pay for it); one it cannot cut, or PostgreSQL's, comes made by the database."""
    plain, odd = say(LONG_TURN), say(f"{LONG_TURN} 🙂 best day", at=1)
    made = []

    def counted(*args, **kwargs):
        made.append(args)
        return snippet(*args, **kwargs)

    monkeypatch.setattr("lens.search.fts5_snippet", counted)
    hits = {hit.id: hit for hit in search("lighthouse keeper", kinds=["event"], neighbours=0)}
    assert set(hits) == {plain.pk, odd.pk} and made == []
    passages = {event_id: hit.snippet for event_id, hit in hits.items()}
    connection = connections[store_for("heart", "event")]
    if connection.vendor != "sqlite":
        assert made == [] and all(MARK_OPEN in passage for passage in passages.values())
        return
    assert made == [(LONG_TURN, ("lighthouse", "keeper"))]  # the emoji one came made
    assert hits[plain.pk].snippet == passages[plain.pk] and len(made) == 2  # made at each reading
    with connection.cursor() as cursor:
        for event in (plain, odd):
            cursor.execute(
                "SELECT snippet(lens_event_fts, 0, '**', '**', '…', 24) FROM lens_event_fts "
                "WHERE lens_event_fts MATCH %s AND rowid = %s",
                [fts5_expression(["lighthouse", "keeper"]), event.pk],
            )
            assert passages[event.pk] == cursor.fetchone()[0].replace("** **", " ")


def test_an_event_found_by_its_neighbour_alone_shows_its_opening():
    """None of the query's words to mark: the passage is where the text begins."""
    say("Did you finish the marathon?", actor="ana")
    event = say(f"I did! Two hours flat. {LONG_TURN}", actor="ben", at=1)
    hits = search("marathon", kinds=["event"])
    (hit,) = [hit for hit in hits if hit.id == event.pk]
    assert hit.snippet.startswith("I did! Two hours flat.")
    assert len(hit.snippet) < len(event.content)
    assert MARK_OPEN not in hit.snippet


def test_it_brings_the_turns_around_an_event_hit():
    before = say("where did you go last weekend?", actor="ana")
    hit_event = say("we hiked up to the old lighthouse", actor="ben", at=1)
    after = say("that sounds lovely", actor="ana", at=2)
    say("unrelated", actor="ben", at=3)
    hit = search("lighthouse", kinds=["event"])[0]  # the next turns match by context too
    assert hit.id == hit_event.pk
    assert [n.id for n in hit.before] == [before.pk]
    assert [n.id for n in hit.after] == [after.pk]
    assert hit.after[0].text == "that sounds lovely" and hit.after[0].actor == "ana"


def test_it_finds_an_answer_by_the_words_of_the_question_before_it():
    say("Which bakery sells the best sourdough near you?", actor="ana")
    answer = say("Probably Marlow's, down by the canal.", actor="ben", at=1)
    say("I bought bread at the market today.", actor="ana", at=30)
    hits = search("best sourdough bakery", kinds=["event"])
    assert answer.pk in [hit.id for hit in hits[:2]]


def test_an_answer_earns_a_share_of_the_question_just_before_it():
    say("I went out last night.", actor="ana", at=0)
    alone = say("It was grand, honestly.", actor="ben", at=1)
    say("How was the lighthouse walk?", actor="ana", at=30)
    answer = say("It was grand, honestly.", actor="ben", at=31)
    ranked = [hit.id for hit in search("grand lighthouse", kinds=["event"])]
    assert ranked.index(answer.pk) < ranked.index(alone.pk)


def test_a_turn_without_the_words_is_found_between_the_turns_that_have_them():
    say("What's that case you were carrying yesterday?", actor="ana")
    answer = say("Ha, my cello! First lesson on Thursday.", actor="ben", at=1)
    say("Play me a tune once you can.", actor="ana", at=2)
    for hour in range(3, 9):
        say(f"Nothing much happened at {hour}.", actor="ben", at=hour)
    hits = search("a tune", kinds=["event"], limit=3)
    assert answer.pk in [hit.id for hit in hits]
    assert [hit.id for hit in hits if hit.beside] == [answer.pk]  # beside the turn with "tune"
    # A neighbour is not brought in past a speaker filter it may not pass, nor as a match.
    assert answer.pk not in [
        hit.id for hit in search("a tune", kinds=["event"], limit=3, actor="ana")
    ]
    assert answer.pk not in [
        hit.id for hit in search("a tune", kinds=["event"], limit=3, words_only=True)
    ]


@given(
    st.dictionaries(st.integers(1, 60), st.floats(0.01, 20), min_size=1, max_size=40),
    st.integers(1, 12),  # mostly fewer than the ranked events: the pruning's case
    st.none() | st.tuples(st.integers(1, 30), st.integers(30, 60)),
)
@example(scores={2: 1.0, 5: 0.6}, depth=2, ids=None)  # turn 1 ties event 5, and is older
def test_the_neighbour_fusion_keeps_the_best_of_every_turn_it_could_score(scores, depth, ids):
    """Scoring only the neighbours that could reach the best ``depth`` gives what scoring the
    neighbours of every ranked event gives."""
    if ids is not None:  # the ranked events are within the range, as the ranking keeps them
        scores = {
            event_id: best for event_id, best in scores.items() if ids[0] <= event_id <= ids[1]
        }
        assume(scores)
    filters = _Filters(since=None, until=None, actor=None, event_ids=ids)

    def fused(event_id):
        better = max(scores.get(event_id - 1, 0.0), scores.get(event_id + 1, 0.0))
        return scores.get(event_id, 0.0) + NEIGHBOUR_FUSION * better

    every = sorted(
        ((fused(event_id), event_id) for event_id in _with_neighbours(scores, filters)),
        key=lambda pair: (-pair[0], pair[1]),
    )
    assert _neighbour_fusion(scores, filters, depth=depth) == every[:depth]


def test_it_finds_an_event_by_its_speaker_and_its_date_in_words():
    say("the parcel came", actor="ana", at=0)  # Monday 2 March 2026
    later = say("the parcel came", actor="ben", at=24 * 30)
    hits = search("parcel april", kinds=["event"])
    assert hits[0].id == later.pk
    assert search("parcel ben", kinds=["event"])[0].id == later.pk


def test_it_filters_events_by_time_actor_and_id_range():
    early = say("tea time", actor="ana", at=0)
    middle = say("tea again", actor="ben", at=5)
    late = say("tea once more", actor="ana", at=10)
    ids = lambda **kw: {hit.id for hit in search("tea", kinds=["event"], **kw)}  # noqa: E731
    assert ids() == {early.pk, middle.pk, late.pk}
    assert ids(since=START + timedelta(hours=5)) == {middle.pk, late.pk}
    assert ids(until=START + timedelta(hours=5)) == {early.pk}
    assert ids(actor="ana") == {early.pk, late.pk}
    assert ids(event_ids=(middle.pk, late.pk)) == {middle.pk, late.pk}


def test_it_indexes_every_event_as_it_is_logged():
    for n in range(30):
        say(f"note number {n} about walking", at=n)
    assert len(search("walking", kinds=["event"], limit=100)) == 30


# --- fragments and working memory --------------------------------------------------------------


def test_it_finds_fragments_and_follows_their_edits():
    Fragment.objects.create(key="fairy", ambient="White softness.", inventory="Grey crewneck.")
    (hit,) = search("crewneck", kinds=["fragment"])
    assert (hit.kind, hit.key, hit.id, hit.text) == ("fragment", "fairy", None, "Grey crewneck.")
    Fragment.objects.filter(key="fairy").update(inventory="A cream cardigan.")
    assert search("crewneck", kinds=["fragment"]) == []
    assert search("cardigan", kinds=["fragment"])[0].key == "fairy"
    Fragment.objects.filter(key="fairy").update(key="fae")
    assert [hit.key for hit in search("cardigan", kinds=["fragment"])] == ["fae"]
    Fragment.objects.filter(key="fae").delete()
    assert search("cardigan", kinds=["fragment"]) == []


def test_it_finds_a_fragment_by_its_key():
    Fragment.objects.create(key="wardrobe", ambient="All the clothes.")
    assert search("wardrobe", kinds=["fragment"])[0].key == "wardrobe"


def test_it_finds_working_memory_and_follows_its_edits():
    item = WorkingMemory.objects.create(type="thought", content="the piano needs tuning")
    (hit,) = search("tuning", kinds=["wm"])
    assert (hit.id, hit.detail) == (item.pk, "thought, active")
    WorkingMemory.objects.filter(pk=item.pk).update(status="resolved")
    assert search("tuning", kinds=["wm"])[0].detail == "thought, resolved"
    WorkingMemory.objects.filter(pk=item.pk).update(content="the violin needs strings")
    assert search("tuning", kinds=["wm"]) == []
    assert search("violin", kinds=["wm"])[0].id == item.pk
    item.delete()
    assert search("violin", kinds=["wm"]) == []


def test_it_merges_all_kinds_by_score_and_keeps_to_the_limit():
    Fragment.objects.create(key="garden", ambient="The garden behind the house.")
    WorkingMemory.objects.create(type="thought", content="the garden wants weeding")
    say("I sat in the garden")
    hits = search("garden")
    assert {hit.kind for hit in hits} == {"fragment", "wm", "event"}
    assert [hit.score for hit in hits] == sorted((hit.score for hit in hits), reverse=True)
    assert len(search("garden", limit=2)) == 2


def test_it_leaves_fragments_out_when_asked_for_one_speaker():
    Fragment.objects.create(key="garden", ambient="The garden.")
    say("garden talk", actor="ana")
    assert {hit.kind for hit in search("garden", actor="ana")} == {"event"}


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"kinds": ["events"]}, "Unknown kind 'events'"),
        ({"limit": 0}, "limit must be a whole number from 1 to 100"),
        ({"limit": 101}, "limit must be a whole number from 1 to 100"),
        ({"since": START, "until": START}, "since must come before until"),
    ],
)
def test_it_refuses_bad_arguments_with_a_clear_error(kwargs, message):
    with pytest.raises(SearchError, match=message):
        search("tea", **kwargs)


def test_it_refuses_a_query_without_words():
    with pytest.raises(SearchError, match="no words"):
        search(" ?! ")


# --- search(…) in a reply: the hits land in the next turn's Recalled section ------------------


def test_it_brings_a_replys_search_hits_into_the_next_turn_only(fake_api, settings):
    from bench.fakeapi import FakeReply
    from heart.services import turn_submit
    from heart.tasks import run_turns_task

    def turn(text):
        run_turns_task(turn_submit(text=text, actor="luna", enqueue=False).pk)
        return "".join(b["text"] for b in fake_api.requests[-1]["messages"][0]["content"])

    Fragment.objects.create(key="lighthouse", ambient="The old lighthouse at Pointe Noire.")
    fake_api.push(
        FakeReply('<say>let me think</say> search("pointe noire")'),
        FakeReply("<say>found it</say>"),
        FakeReply("<say>ok</say>"),
    )
    asking = turn("<luna>we walked out to Pointe Noire, remember?</luna>")
    assert "## Recalled" not in asking
    answered = turn("<luna>well?</luna>")
    recalled = answered.split("## Recalled\n", 1)[1].split("\n## ", 1)[0]
    assert '### fragment:lighthouse (search "pointe noire")' in recalled
    assert "The old lighthouse at Pointe Noire." in recalled
    assert "luna: <luna>we walked out to Pointe Noire, remember?</luna>" in recalled
    assert "## Recalled" not in turn("<luna>and now?</luna>")


def test_it_keeps_searched_hits_within_the_recall_budget(fake_api, settings):
    from bench.fakeapi import FakeReply
    from heart.models import ContextSnapshot
    from heart.services import turn_submit
    from heart.tasks import run_turns_task
    from silentstar.tokens import estimate_tokens

    settings.BUDGET_RECALL = 60
    for n in range(5):
        Fragment.objects.create(key=f"walk-{n}", ambient=f"walk number {n} " + "far " * 30)
    fake_api.push(FakeReply('<say>hm</say> search("walk")'), FakeReply("<say>ok</say>"))
    for text in ("<luna>a walk?</luna>", "<luna>so?</luna>"):
        run_turns_task(turn_submit(text=text, actor="luna", enqueue=False).pk)
    snapshot = ContextSnapshot.objects.order_by("-pk").first()
    recalled = snapshot.assembled_user.split("## Recalled\n", 1)[1].split("\n\n## ", 1)[0]
    assert 0 < estimate_tokens("## Recalled\n" + recalled) <= 60
    assert snapshot.token_counts["recalled"] <= 60
    assert snapshot.items_included["dropped"]["recalled"] > 0


# --- what each search reads ------------------------------------------------------------------


def test_it_filters_working_memory_and_fragments_by_time_and_speaker():
    old = WorkingMemory.objects.create(type="thought", content="kite string", actor="ana")
    new = WorkingMemory.objects.create(type="thought", content="kite tail", actor="ben")
    WorkingMemory.objects.filter(pk=old.pk).update(created_at=START)
    WorkingMemory.objects.filter(pk=new.pk).update(created_at=START + timedelta(days=1))
    Fragment.objects.create(key="kite", ambient="The red kite.")
    Fragment.objects.filter(key="kite").update(updated_at=START)
    ids = lambda **kw: [hit.ref for hit in search("kite", kinds=["wm", "fragment"], **kw)]  # noqa: E731
    assert set(ids()) == {f"wm:{old.pk}", f"wm:{new.pk}", "fragment:kite"}
    assert set(ids(until=START + timedelta(hours=1))) == {f"wm:{old.pk}", "fragment:kite"}
    assert ids(since=START + timedelta(hours=1)) == [f"wm:{new.pk}"]
    assert ids(actor="ben") == [f"wm:{new.pk}"]


def test_hits_carry_the_stored_rows_as_the_orm_reads_them():
    first = say("the harbour at night", actor="ana", at=0)
    second = say("the harbour lights", actor="ben", at=1)
    item = WorkingMemory.objects.create(type="plan", content="walk the harbour", actor="ana")
    fragment = Fragment.objects.create(key="harbour", recognition="Boats.", inventory=" ")
    hits = {hit.ref: hit for hit in search("harbour")}
    event_hit = hits[f"event:{second.pk}"]
    assert (event_hit.ts, event_hit.actor, event_hit.text) == (second.ts, "ben", second.content)
    assert event_hit.before[0].ts == first.ts and event_hit.ts.tzinfo is not None
    wm_hit = hits[f"wm:{item.pk}"]
    assert (wm_hit.ts, wm_hit.actor, wm_hit.detail) == (item.created_at, "ana", "plan, active")
    fragment.refresh_from_db()
    assert (hits["fragment:harbour"].ts, hits["fragment:harbour"].text) == (
        fragment.updated_at,
        "Boats.",
    )


def test_each_kind_is_searched_in_few_statements(django_assert_max_num_queries):
    for n in range(5):
        say(f"the concert in the park, part {n}", at=n)
    WorkingMemory.objects.create(type="thought", content="concert tickets")
    Fragment.objects.create(key="music", ambient="The concert hall.")
    store = lambda app, model: connections[store_for(app, model)]  # noqa: E731
    # The ranking of the query's words, then the hits with their turns; run
    # through Django's cursor, as whenever its statements are watched.
    with django_assert_max_num_queries(2, connection=store("heart", "event")) as captured:
        assert search("concert", kinds=["event"])
    assert captured.captured_queries
    with django_assert_max_num_queries(1, connection=store("gem", "workingmemory")):
        assert search("concert", kinds=["wm"])
    with django_assert_max_num_queries(1, connection=store("gem", "fragment")):
        assert search("concert", kinds=["fragment"])


# --- in the companion's context -----------------------------------------------------------------


def test_a_reply_search_brings_one_passage_for_neighbouring_hits_and_more_distinct_memories():
    say("Guess what, I'm starting the cello.", actor="theo")
    say("The cello! When are the lessons?", actor="ana", at=1)
    say("Cello lesson on Thursdays, with Dolores.", actor="theo", at=2)
    say("Thursdays suit you, cello suits you too.", actor="ana", at=3)
    say("Yes, a lesson every Thursdays, cello in hand.", actor="theo", at=4)
    for hour in range(5, 12):
        say(f"The bus was late again at {hour}.", actor="ana", at=hour)
    say("Dolores said my cello lesson went well.", actor="theo", at=20)
    for hour in range(21, 26):
        say(f"Rain again at {hour}.", actor="ana", at=hour)
    last = say("Thursdays are for the choir too.", actor="ana", at=30)
    items = search_recalled(["cello lesson Thursdays"], before_event=last.pk + 1)
    texts = [item.text for item in items]
    # One passage for the exchange the hits share, each of its turns once.
    assert sum(text.count("Cello lesson on Thursdays, with Dolores.") for text in texts) == 1
    assert len(items) == SEARCH_RECALL_HITS
    assert any("Dolores said my cello lesson went well." in text for text in texts)
    assert any("Thursdays are for the choir too." in text for text in texts)


# --- one scale across kinds: a first evening's memory -------------------------------------------
#
# A few turns as the chat logs them (identity tags, display tags, knowledge tags, a recall), the
# fragments and working memory they led to, and small talk around them, so that the turns' BM25
# has a log to weigh words in while the fragments' has a handful of rows.

EVENING = [
    ("luna", "<luna>I have physio on Tuesday morning <plan>physio Tuesday 10am</plan></luna>"),
    ("claude", "<say>Good luck, I'll keep it in mind.</say> recall(about)"),
    ("renki", "<renki>Made genmaicha tonight <pin>I love genmaicha</pin></renki>"),
    ("claude", "<say>Toasted rice in the cup, lovely.</say>"),
    ("chloe", "<chloe>tea with honey, and walks at dusk</chloe>"),
    ("claude", "<thought>she likes quiet evenings</thought><say>That sounds calm.</say>"),
    ("luna", "<luna>the physio said my knee is better</luna>"),
    ("claude", "<say>That's wonderful news!</say>"),
]
SMALL_TALK = [
    "<luna>what a long day</luna>",
    "<say>Long days deserve a slow evening.</say>",
    "<renki>the bus was late again</renki>",
    "<say>Again? That bus.</say>",
    "<chloe>it rained all afternoon</chloe>",
    "<say>Good weather for staying in.</say>",
]


def first_evening() -> dict[str, Event]:
    names = ["luna", "renki", "chloe", "claude"]
    at = 0
    for n in range(4):  # small talk before and after the evening
        for text in SMALL_TALK:
            actor = "claude" if text.startswith("<say>") else names[n % 3]
            event_record(text=text, actor=actor, ts=START + timedelta(hours=at), identities=names)
            at += 1
        if n == 1:
            for actor, text in EVENING:
                event_record(
                    text=text, actor=actor, ts=START + timedelta(hours=at), identities=names
                )
                at += 1
    Fragment.objects.create(
        key="physio",
        ambient="Luna's knee, mending slowly.",
        recognition="Physio on Tuesdays at ten, with Mara; the exercises after.",
        inventory="Knee: torn meniscus, March.",
    )
    Fragment.objects.create(key="genmaicha", ambient="Renki's toasted-rice green tea.")
    Fragment.objects.create(key="evenings", ambient="Quiet evenings at home, the lamp on.")
    WorkingMemory.objects.create(type="plan", content="physio Tuesday 10am", actor="luna")
    WorkingMemory.objects.create(type="pin", content="I love genmaicha", actor="renki")
    WorkingMemory.objects.create(type="plan", content="a walk at dusk with Chloe", actor="chloe")
    return {event.content: event for event in Event.objects.all()}


def ref_of(spec: str) -> str:
    """``fragment:key`` as it is; ``wm:words`` and ``event:words``: the item or turn whose
    text holds those words."""
    kind, words = spec.split(":", 1)
    if kind == "wm":
        return f"wm:{WorkingMemory.objects.get(content__contains=words).pk}"
    if kind == "event":
        return f"event:{Event.objects.get(content__contains=words).pk}"
    return spec


@pytest.mark.parametrize(
    ("query", "first"),
    [
        ("physio", ["fragment:physio", "wm:physio Tuesday"]),  # the key, then the plan
        ("genmaicha", ["fragment:genmaicha", "wm:I love genmaicha"]),
        ("tea", ["fragment:genmaicha", "event:tea with honey"]),  # both hold it: kinds decide
        ("physio Tuesday", ["fragment:physio", "wm:physio Tuesday", "event:I have physio"]),
        ("honey dusk", ["event:tea with honey"]),  # both words; the walk at dusk holds one
        ("quiet evenings", ["fragment:evenings"]),
    ],
)
def test_it_ranks_every_kind_on_one_scale(query, first):
    """What holds more of the query comes first whatever its kind, and a fragment whose key or
    tiers hold the words comes before the turns of the log."""
    first_evening()
    hits = search(query, limit=20)
    assert [hit.ref for hit in hits[: len(first)]] == [ref_of(spec) for spec in first]
    assert [hit.score for hit in hits] == sorted((hit.score for hit in hits), reverse=True)
    assert 0 < hits[0].score <= 1


@pytest.mark.parametrize("query", ["physio", "genmaicha", "tea", "dusk"])
def test_a_turn_beside_a_match_comes_after_the_hit_it_is_beside_and_among_its_turns(query):
    """A turn the words did not find is there for the hit next to it: ranked after it, shown
    among its turns, and never a memory of its own in a reply's search."""
    events = first_evening()
    hits = search(query, limit=30)
    rank = {hit.id: n for n, hit in enumerate(hits) if hit.kind == "event"}
    beside = [hit for hit in hits if hit.beside]
    assert beside and all(hit.kind == "event" for hit in beside)
    for hit in beside:
        (found,) = [
            other
            for other in hits
            if other.kind == "event" and not other.beside and abs(other.id - hit.id) == 1
        ][:1]
        assert rank[found.id] < rank[hit.id]
        assert hit.id in [turn.id for turn in (*found.before, *found.after)]
    last = max(event.pk for event in events.values())
    recalled = {item.key for item in search_recalled([query], before_event=last + 1)}
    assert not recalled & {hit.ref for hit in beside}


def test_a_fragment_hit_shows_the_tier_that_holds_the_words():
    first_evening()
    (hit,) = search("Tuesdays", kinds=["fragment"])
    assert (hit.key, hit.tier) == ("physio", "recognition")
    assert hit.snippet == (
        f"Physio on {MARK_OPEN}Tuesdays{MARK_OPEN} at ten, with Mara; the exercises after."
    )
    (hit,) = search("meniscus", kinds=["fragment"])
    assert (hit.tier, hit.snippet) == (
        "inventory",
        f"Knee: torn {MARK_OPEN}meniscus{MARK_OPEN}, March.",
    )
    (hit,) = search("genmaicha", kinds=["fragment"])  # the key alone: its first tier
    assert (hit.tier, hit.snippet) == ("ambient", "Renki's toasted-rice green tea.")


def test_a_reply_search_reads_the_best_of_every_kind_first():
    first_evening()
    items = search_recalled(["physio"], before_event=Event.objects.count() + 1)
    assert [item.key for item in items[:2]] == ["fragment:physio", ref_of("wm:physio Tuesday")]


# --- summaries ------------------------------------------------------------------------------


def summarise(first, last, content, *, level="L0"):
    return Summary.objects.create(
        level=level, first_event_id=first, last_event_id=last, content=content
    )


def test_it_searches_summaries_only_when_they_are_named():
    """The search page, the command and a reply's search(…) find what they found before."""
    summary = summarise(3, 9, "Luna and Ben walked out to the lighthouse at dusk.")
    said = say("the lighthouse keeper waved")
    assert "summary" in KINDS and "summary" not in DEFAULT_KINDS
    assert {hit.kind for hit in search("lighthouse")} == {"event"}
    recalled = search_recalled(["lighthouse"], before_event=said.pk + 1)
    assert [item.key.split(":")[0] for item in recalled] == ["event"]
    (hit,) = search("lighthouses", kinds=("summary",))
    assert (hit.ref, hit.key) == (f"summary:{summary.pk}", None)
    assert (hit.text, hit.ts, hit.detail) == (summary.content, summary.created_at, "L0, events 3–9")
    assert hit.snippet == (
        f"Luna and Ben walked out to the {MARK_OPEN}lighthouse{MARK_OPEN} at dusk."
    )
    assert hit.score == 1.0  # the best of its kind holds every word of the query


def test_it_follows_a_summarys_edits_and_deletion():
    summary = summarise(1, 5, "They planned the picnic by the river.")
    assert [hit.id for hit in search("picnic", kinds=["summary"])] == [summary.pk]
    Summary.objects.filter(pk=summary.pk).update(content="They planned the concert instead.")
    assert search("picnic", kinds=["summary"]) == []
    assert [hit.id for hit in search("concert", kinds=["summary"])] == [summary.pk]
    summary.delete()
    assert search("concert", kinds=["summary"]) == []


def test_a_superseded_summary_stays_found_and_says_so():
    old = summarise(1, 5, "They planned the picnic by the river.")
    new = summarise(1, 5, "A picnic by the river, planned for Sunday.")
    Summary.objects.filter(pk=old.pk).update(superseded_by=new)
    hits = {hit.id: hit for hit in search("picnic river", kinds=["summary"])}
    assert set(hits) == {old.pk, new.pk}  # still indexed: superseding changed no text
    assert hits[old.pk].detail == f"L0, events 1–5, superseded by #{new.pk}"


@pytest.mark.parametrize(
    ("event_ids", "found"),
    [
        ((1, 100), {"early", "middle", "late"}),
        ((15, 25), {"middle", "late"}),  # a span that overlaps the range, not only one inside it
        ((10, 10), {"early"}),  # a span's last event
        ((21, 21), {"late"}),  # a span's first event
        ((31, 40), set()),  # after every span
    ],
)
def test_it_keeps_summaries_whose_span_overlaps_the_event_range(event_ids, found):
    spans = {"early": (1, 10), "middle": (11, 20), "late": (21, 30)}
    ids = {summarise(*span, f"The {name} garden talk.").pk: name for name, span in spans.items()}
    hits = search("garden", kinds=["summary"], event_ids=event_ids)
    assert {ids[hit.id] for hit in hits} == found


def test_it_filters_summaries_by_time_and_leaves_them_out_for_one_speaker():
    old = summarise(1, 5, "Kites on the hill.")
    new = summarise(6, 9, "Kites again.", level="L1")
    Summary.objects.filter(pk=old.pk).update(created_at=START)
    Summary.objects.filter(pk=new.pk).update(created_at=START + timedelta(days=1))
    ids = lambda **kw: [hit.id for hit in search("kites", kinds=["summary"], **kw)]  # noqa: E731
    assert set(ids()) == {old.pk, new.pk}
    assert ids(until=START + timedelta(hours=1)) == [old.pk]
    assert ids(since=START + timedelta(hours=1)) == [new.pk]
    assert ids(actor="ana") == []


def test_it_ranks_summaries_with_the_other_kinds_on_one_scale():
    say("the garden was lovely", actor="ana")
    summarise(1, 1, "Ana spent the morning in the garden, weeding by the roses.")
    hits = search("garden roses", kinds=["event", "summary"])
    assert [hit.kind for hit in hits] == ["summary", "event"]  # it holds both words
    assert [hit.score for hit in hits] == [1.0, 0.5]


def test_a_summary_search_is_one_statement_on_the_summaries_store(django_assert_max_num_queries):
    summarise(1, 5, "A long talk about the concert.")
    with django_assert_max_num_queries(1, connection=connections[store_for("mirror", "summary")]):
        assert search("concert", kinds=["summary"], event_ids=(1, 3))
