import ast
from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from django.apps import apps
from django.conf import settings as django_settings
from django.contrib.admin.models import LogEntry
from django.db import IntegrityError, connections, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from events.models import Event
from gem.meaning import semantic_hash
from gem.models import Forgotten, WorkingMemory, WorkingMemorySource
from gem.services import working_memory_forget
from gem.state import TURN_COUNTER, state_set
from mirror.models import Proposer, Summary, TagSuggestion
from mirror.run import mirror_run
from mirror.services import (
    Staged,
    SuggestionError,
    suggestion_edit,
    suggestion_forget,
    suggestion_promote,
    suggestion_reject,
    suggestions_stage,
)

pytestmark = pytest.mark.django_db(databases="__all__")


@pytest.fixture
def suggestion():
    summary = Summary.objects.create(level="L0", first_event_id=10, last_event_id=40, content="s")
    return TagSuggestion.objects.create(summary=summary, type="pin", content="tea, no sugar")


def test_it_promotes_a_suggestion_into_working_memory_linked_back(admin_user, suggestion):
    item = suggestion_promote(user_id=admin_user.pk, suggestion_id=suggestion.pk)
    suggestion.refresh_from_db()
    assert (item.type, item.content, item.status, item.actor) == (
        "pin",
        "tea, no sugar",
        "active",
        "mirror",
    )
    assert item.event_id == 40
    assert (suggestion.status, suggestion.promoted_wm_id) == ("promoted", item.pk)
    assert item.suggestion_id == suggestion.pk
    assert suggestion.decided_at is not None


def test_it_promotes_with_a_persons_edits(admin_user, suggestion):
    item = suggestion_promote(
        user_id=admin_user.pk,
        suggestion_id=suggestion.pk,
        edits={"type": "plan", "content": "buy tea friday at 5pm"},
    )
    assert (item.type, item.content) == ("plan", "buy tea friday at 5pm")
    assert TagSuggestion.objects.get().content == "buy tea friday at 5pm"


def test_another_agents_plan_is_promoted_with_its_due_date_said_by_its_agent(admin_user):
    due = timezone.now() + timedelta(days=4)
    plan = TagSuggestion.objects.create(
        proposer=Proposer.COMPASS,
        type="plan",
        content="a long walk before the move",
        due=due,
        hidden=True,
        reason="the move will be tiring",
    )

    item = suggestion_promote(user_id=admin_user.pk, suggestion_id=plan.pk)

    assert (item.type, item.due, item.hidden, item.actor, item.event_id) == (
        "plan",
        due,
        True,
        "compass",
        None,
    )
    assert not WorkingMemorySource.objects.exists()
    assert LogEntry.objects.filter(change_message=f"Promoted from Compass suggestion {plan.pk}")


def test_a_due_date_that_has_passed_is_refused_and_the_suggestion_stays_pending(admin_user):
    plan = TagSuggestion.objects.create(
        proposer=Proposer.COMPASS,
        type="plan",
        content="stretch",
        due=timezone.now() + timedelta(minutes=1),
    )
    past = timezone.now() - timedelta(hours=1)

    with pytest.raises(SuggestionError, match="which has passed: give it a due date to come"):
        suggestion_promote(user_id=admin_user.pk, suggestion_id=plan.pk, edits={"due": past})
    with pytest.raises(SuggestionError, match="Only a plan with a due date can be hidden"):
        suggestion_promote(
            user_id=admin_user.pk, suggestion_id=plan.pk, edits={"type": "pin", "hidden": True}
        )

    assert TagSuggestion.objects.get().status == "pending"
    assert not WorkingMemory.objects.exists()
    later = timezone.now() + timedelta(days=2)
    item = suggestion_promote(user_id=admin_user.pk, suggestion_id=plan.pk, edits={"due": later})
    assert item.due == later


def test_only_the_mirrors_suggestions_need_a_summary():
    with pytest.raises(IntegrityError):
        TagSuggestion.objects.create(type="pin", content="tea")


def test_it_acts_on_a_suggestion_only_once(admin_user, suggestion):
    suggestion_promote(user_id=admin_user.pk, suggestion_id=suggestion.pk)
    with pytest.raises(SuggestionError, match="already promoted"):
        suggestion_promote(user_id=admin_user.pk, suggestion_id=suggestion.pk)
    with pytest.raises(SuggestionError, match="already promoted"):
        suggestion_reject(user_id=admin_user.pk, suggestion_id=suggestion.pk)
    assert WorkingMemory.objects.count() == 1


def test_it_rejects_a_suggestion_without_touching_working_memory(admin_user, suggestion):
    suggestion_reject(user_id=admin_user.pk, suggestion_id=suggestion.pk)
    assert TagSuggestion.objects.get().status == "rejected"
    with pytest.raises(SuggestionError, match="already rejected"):
        suggestion_promote(user_id=admin_user.pk, suggestion_id=suggestion.pk)
    assert not WorkingMemory.objects.exists()


@pytest.mark.parametrize(
    ("edits", "reason"),
    [
        ({"type": "mood"}, "not a working-memory type"),
        ({"content": "  "}, "needs some content"),
        ({"status": "active"}, "can be edited"),
    ],
)
def test_it_refuses_bad_edits_and_leaves_the_suggestion_pending(
    admin_user, suggestion, edits, reason
):
    with pytest.raises(SuggestionError, match=reason):
        suggestion_promote(user_id=admin_user.pk, suggestion_id=suggestion.pk, edits=edits)
    assert TagSuggestion.objects.get().status == "pending"


def test_it_edits_a_pending_suggestion_and_keeps_it_pending(suggestion):
    edited = suggestion_edit(
        suggestion_id=suggestion.pk, edits={"content": "tea, never sugar", "subject": "luna"}
    )

    assert (edited.content, edited.subject, edited.status) == (
        "tea, never sugar",
        "luna",
        "pending",
    )
    assert not WorkingMemory.objects.exists()


@pytest.mark.parametrize(
    ("edits", "said"),
    [
        ({"hidden": True}, "only a plan with a due date can be hidden"),
        ({"content": " "}, "needs some content"),
        ({"type": "wish"}, "not a working-memory type"),
        ({"status": "promoted"}, "can be edited"),
    ],
)
def test_it_refuses_an_edit_a_suggestion_cannot_hold(suggestion, edits, said):
    with pytest.raises(SuggestionError, match=said):
        suggestion_edit(suggestion_id=suggestion.pk, edits=edits)

    suggestion.refresh_from_db()
    assert (suggestion.content, suggestion.hidden, suggestion.status) == (
        "tea, no sugar",
        False,
        "pending",
    )


def test_it_keeps_the_words_of_a_suggestion_decided_meanwhile(admin_user, suggestion):
    suggestion_reject(suggestion_id=suggestion.pk, user_id=admin_user.pk)

    with pytest.raises(SuggestionError, match="already rejected"):
        suggestion_edit(suggestion_id=suggestion.pk, edits={"content": "rewritten"})
    suggestion.refresh_from_db()
    assert suggestion.content == "tea, no sugar"


def test_it_says_when_there_is_no_such_suggestion(admin_user):
    with pytest.raises(SuggestionError, match="no suggestion 99"):
        suggestion_reject(user_id=admin_user.pk, suggestion_id=99)


def test_it_logs_each_decision_under_the_person(admin_user, suggestion):
    item = suggestion_promote(
        user_id=admin_user.pk, suggestion_id=suggestion.pk, edits={"subject": "tea"}
    )
    messages = {
        (entry.content_type.model, entry.object_id): entry.change_message
        for entry in LogEntry.objects.filter(user=admin_user)
    }
    assert messages == {
        ("tagsuggestion", str(suggestion.pk)): f"Promoted to working memory item {item.pk}, "
        "with subject edited",
        ("workingmemory", str(item.pk)): f"Promoted from Mirror suggestion {suggestion.pk}",
    }


def test_it_promotes_a_feeling_as_the_one_active_feeling(admin_user):
    before = WorkingMemory.objects.create(type="feeling", content="restless", turn=1)
    summary = Summary.objects.create(level="L0", first_event_id=1, last_event_id=2, content="s")
    feeling = TagSuggestion.objects.create(summary=summary, type="feeling", content="calm again")

    item = suggestion_promote(user_id=admin_user.pk, suggestion_id=feeling.pk)

    before.refresh_from_db()
    assert before.status == "superseded"
    assert list(WorkingMemory.objects.filter(status="active", type="feeling")) == [item]


def test_it_promotes_a_plan_due_when_its_words_said_and_at_this_turn(admin_user, settings):
    settings.TIME_ZONE = "Europe/Amsterdam"
    said_at = datetime(2026, 11, 24, 10, 0, tzinfo=ZoneInfo("Europe/Amsterdam"))  # a Tuesday
    event = Event.objects.create(
        ts=said_at, content="call the physio on friday at 5pm", actor="luna"
    )
    state_set(TURN_COUNTER, 37)
    summary = Summary.objects.create(
        level="L0", first_event_id=event.pk, last_event_id=event.pk, content="s"
    )
    plan = TagSuggestion.objects.create(
        summary=summary, type="plan", content="call the physio on friday at 5pm"
    )

    item = suggestion_promote(user_id=admin_user.pk, suggestion_id=plan.pk)

    item.refresh_from_db()
    assert item.due == datetime(2026, 11, 27, 17, 0, tzinfo=ZoneInfo("Europe/Amsterdam"))
    assert item.turn == 37


def test_it_promotes_a_suggestion_that_repeats_an_active_item_as_a_refresh(admin_user, suggestion):
    same = WorkingMemory.objects.create(
        type="pin", content="tea, no sugar", turn=1, semantic_hash=semantic_hash("tea, no sugar")
    )

    item = suggestion_promote(user_id=admin_user.pk, suggestion_id=suggestion.pk)

    assert item.pk == same.pk
    assert WorkingMemory.objects.count() == 1
    assert TagSuggestion.objects.get().promoted_wm_id == same.pk


@pytest.fixture
def tea_talk():
    """A summary's range: two of the person's turns and the offline companion's replies, the
    last of them echoing the person's words."""
    said = [
        Event.objects.create(content="<say>I only drink tea without sugar</say>", actor="luna"),
        Event.objects.create(
            content="(offline — no API key is set) You said: I only drink tea", actor="claude"
        ),
        Event.objects.create(content="The weather is grey today.", actor="hasuki"),
        Event.objects.create(content="Sugar? Never in my tea, promise.", actor="luna"),
        Event.objects.create(
            content="<thought>offline reply</thought> You said: Sugar? Never in my tea",
            actor="claude",
        ),
    ]
    summary = Summary.objects.create(
        level="L0", first_event_id=said[0].pk, last_event_id=said[-1].pk, content="s"
    )
    return said, summary


def sources_of(item) -> list[int]:
    return list(
        WorkingMemorySource.objects.filter(wm=item)
        .order_by("event_id")
        .values_list("event_id", flat=True)
    )


def test_it_links_a_promoted_item_to_the_persons_events_that_carry_its_words(admin_user, tea_talk):
    said, summary = tea_talk
    pin = TagSuggestion.objects.create(summary=summary, type="pin", content="tea, no sugar")

    item = suggestion_promote(user_id=admin_user.pk, suggestion_id=pin.pk)

    assert sources_of(item) == [said[0].pk, said[3].pk]  # never the replies that echo them
    assert item.event_id == said[3].pk  # the newest it came from, not the summary's last
    assert item.actor == "luna"  # who said it, not the Mirror


def test_it_links_every_one_of_the_persons_events_when_none_shares_a_word(admin_user, tea_talk):
    said, summary = tea_talk
    thought = TagSuggestion.objects.create(
        summary=summary, type="thought", content="she likes rituals"
    )

    item = suggestion_promote(user_id=admin_user.pk, suggestion_id=thought.pk)

    assert sources_of(item) == [said[0].pk, said[2].pk, said[3].pk]
    assert item.actor == "mirror"  # the words are the Mirror's own


def test_a_persons_edits_choose_the_events(admin_user, tea_talk):
    said, summary = tea_talk
    pin = TagSuggestion.objects.create(summary=summary, type="pin", content="tea, no sugar")

    item = suggestion_promote(
        user_id=admin_user.pk, suggestion_id=pin.pk, edits={"content": "grey weather"}
    )

    assert sources_of(item) == [said[2].pk]
    assert item.actor == "hasuki"


def test_a_failed_promotion_records_no_sources(admin_user, tea_talk, monkeypatch):
    _, summary = tea_talk
    pin = TagSuggestion.objects.create(summary=summary, type="pin", content="tea, no sugar")

    def broken(*args, **kwargs):
        raise RuntimeError("the disk is full")

    monkeypatch.setattr(WorkingMemorySource.objects, "bulk_create", broken)
    with pytest.raises(RuntimeError):
        suggestion_promote(user_id=admin_user.pk, suggestion_id=pin.pk)

    assert not WorkingMemory.objects.exists() and not WorkingMemorySource.objects.exists()
    assert TagSuggestion.objects.get().status == "pending"


def test_an_item_is_said_by_its_subject_when_the_subject_said_its_words(admin_user):
    said = [
        Event.objects.create(content="I hate cilantro", actor="luna"),
        Event.objects.create(content="luna hates cilantro, for the record", actor="renki"),
    ]
    summary = Summary.objects.create(
        level="L0", first_event_id=said[0].pk, last_event_id=said[1].pk, content="s"
    )
    hers = TagSuggestion.objects.create(
        summary=summary, type="pin", subject="luna", content="I hate cilantro"
    )
    unnamed = TagSuggestion.objects.create(summary=summary, type="pin", content="no cilantro")

    items = [suggestion_promote(user_id=admin_user.pk, suggestion_id=s.pk) for s in (hers, unnamed)]

    assert [(item.actor, item.event_id) for item in items] == [
        ("luna", said[0].pk),
        ("renki", said[1].pk),
    ]


def test_the_offline_mirrors_suggestions_keep_who_said_them_when_promoted(
    admin_user, log, settings
):
    settings.COMPANION_OFFLINE = True
    reply = "<say>(offline — no API key is set) I got your message.</say>"
    log.turn("can you remember that I hate cilantro?", reply, actor="luna")
    log.turn("remind me to water the plants tonight", reply, actor="renki")

    assert mirror_run(force=True).status == "done"
    suggestions = list(TagSuggestion.objects.order_by("id"))
    items = [suggestion_promote(user_id=admin_user.pk, suggestion_id=s.pk) for s in suggestions]

    assert [(s.type, s.subject, s.content) for s in suggestions] == [
        ("pin", "luna", "I hate cilantro"),
        ("plan", "renki", "water the plants tonight"),
    ]
    assert [(item.type, item.subject, item.actor) for item in items] == [
        ("pin", "luna", "luna"),
        ("plan", "renki", "renki"),
    ]


# --- Staging ----------------------------------------------------------------------------------


def test_it_stages_many_suggestions_in_one_insert_and_returns_them_in_order():
    memories = [Staged(type="pin", content=f"memory {n}") for n in range(300)]

    with CaptureQueriesContext(connections["summaries"]) as queries:
        staged = suggestions_stage(proposer=Proposer.IMPORT, suggestions=memories)

    inserts = [q for q in queries.captured_queries if q["sql"].startswith("INSERT")]
    assert len(inserts) == 1
    assert [s.content for s in staged] == [m.content for m in memories]
    assert [s.pk for s in staged] == sorted(TagSuggestion.objects.values_list("pk", flat=True))
    assert set(TagSuggestion.objects.values_list("proposer", "status")) == {("import", "pending")}


def test_it_writes_every_field_a_proposer_gives():
    due = timezone.now() + timedelta(days=3)
    remembered = datetime(2024, 5, 1, 9, 30, tzinfo=UTC)

    plan, memory = suggestions_stage(
        proposer=Proposer.IMPORT,
        suggestions=[
            Staged(type="plan", content="renew the passport", due=due, hidden=True, reason="why"),
            Staged(type="desc", content="likes green tea", subject="luna", at=remembered),
        ],
    )

    plan.refresh_from_db()
    memory.refresh_from_db()
    assert (plan.type, plan.due, plan.hidden, plan.reason, plan.summary) == (
        "plan",
        due,
        True,
        "why",
        None,
    )
    assert (memory.subject, memory.created_at, memory.due, memory.hidden) == (
        "luna",
        remembered,
        None,
        False,
    )
    assert plan.created_at > remembered  # given no time, it is staged now


def test_the_mirrors_are_capped_pins_first_and_none_repeats_what_is_known():
    summary = Summary.objects.create(level="L0", first_event_id=1, last_event_id=9, content="s")
    WorkingMemory.objects.create(type="pin", content="tea without sugar", turn=1)
    suggestions_stage(
        proposer=Proposer.COMPASS,
        suggestions=[Staged(type="plan", content="walk the dog at dawn", due=None)],
    )
    offered = [
        Staged(type="thought", content="she is tired of the rain"),
        Staged(type="pin", content="tea without any sugar"),  # an active item's words
        Staged(type="plan", content="walk the dog at dawn daily"),  # a pending suggestion's
        Staged(type="pin", content="the cat is called Miso"),
        Staged(type="feeling", content="she is tired of rain"),  # one chosen before it
        Staged(type="desc", content="the flat is on the third floor"),
    ]

    staged = suggestions_stage(
        proposer=Proposer.MIRROR, summary=summary, suggestions=offered, cap=2
    )

    assert [(s.type, s.content, s.summary_id) for s in staged] == [
        ("pin", "the cat is called Miso", summary.pk),
        ("thought", "she is tired of the rain", summary.pk),
    ]
    assert (
        suggestions_stage(
            proposer=Proposer.MIRROR, summary=summary, suggestions=offered[-1:], cap=0
        )
        == []
    )


def test_other_proposers_stage_every_suggestion_as_given():
    WorkingMemory.objects.create(type="pattern", content="she cooks when anxious", turn=1)
    patterns = [Staged(type="pattern", content="she cooks when anxious")] * 3

    staged = suggestions_stage(proposer=Proposer.LOOM, suggestions=patterns)

    assert len(staged) == TagSuggestion.objects.count() == 3


@pytest.mark.parametrize(
    ("proposer", "summary", "suggestion", "refusal"),
    [
        ("weaver", False, Staged(type="pin", content="tea"), "not one of the proposers"),
        (Proposer.MIRROR, False, Staged(type="pin", content="tea"), "comes from a summary"),
        (Proposer.LOOM, True, Staged(type="pattern", content="tea"), "Only the Mirror"),
        (Proposer.IMPORT, False, Staged(type="wish", content="tea"), "not a working-memory type"),
        (
            Proposer.COMPASS,
            False,
            Staged(type="plan", content="tea", due=datetime(2030, 1, 1)),
            "needs its time zone",
        ),
        (
            Proposer.COMPASS,
            False,
            Staged(type="plan", content="tea", hidden=True),
            "only a plan with a due date can be hidden",
        ),
        (
            Proposer.IMPORT,
            False,
            Staged(type="pin", content="tea", due=datetime(2030, 1, 1, tzinfo=UTC), hidden=True),
            "only a plan with a due date can be hidden",
        ),
    ],
)
def test_it_refuses_a_suggestion_it_cannot_stage_and_stages_none_of_the_batch(
    proposer, summary, suggestion, refusal
):
    read_in = (
        Summary.objects.create(level="L0", first_event_id=1, last_event_id=2, content="s")
        if summary
        else None
    )
    good = Staged(type=suggestion.type, content="a good one")

    with pytest.raises(SuggestionError, match=refusal):
        suggestions_stage(proposer=proposer, summary=read_in, suggestions=[good, suggestion])

    assert not TagSuggestion.objects.exists()


def test_it_stages_in_the_callers_transaction_and_goes_back_with_it():
    with pytest.raises(RuntimeError), transaction.atomic(using="summaries"):
        suggestions_stage(proposer=Proposer.IMPORT, suggestions=[Staged(type="pin", content="tea")])
        raise RuntimeError("the import's markers could not be written")

    assert not TagSuggestion.objects.exists()


NEW_SUGGESTION = {"create", "bulk_create", "get_or_create", "update_or_create"}


def _dotted(node: ast.expr) -> str:
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    return node.id if isinstance(node, ast.Name) else ""


def test_no_code_but_the_staging_service_writes_a_new_suggestion():
    """A suggestion is made (TagSuggestion(…), or its manager's create, bulk_create,
    get_or_create or update_or_create) in ``mirror/services.py`` only: every proposer calls
    ``suggestions_stage``. Tests and migrations are not the product."""
    root = Path(django_settings.BASE_DIR)
    folders = {
        Path(app.path)
        for app in apps.get_app_configs()
        if Path(app.path).is_relative_to(root) and ".venv" not in Path(app.path).parts
    }
    service = root / "mirror" / "services.py"
    found = []
    for folder in sorted(folders):
        for path in sorted(folder.rglob("*.py")):
            if path == service or {"migrations", "tests"} & set(path.relative_to(root).parts):
                continue
            for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
                if not isinstance(node, ast.Call):
                    continue
                called = _dotted(node.func).split(".")
                made = called[-1] == "TagSuggestion"
                managed = called[-3:-1] == ["TagSuggestion", "objects"] and (
                    called[-1] in NEW_SUGGESTION
                )
                if made or managed:
                    found.append(f"{path.relative_to(root)}:{node.lineno}")
    assert {Path(app.path).name for app in apps.get_app_configs()} >= {"mirror", "transfer"}
    assert found == []


CHANGED = {"update", "delete", "bulk_update"}


def _suggestion_chain(node: ast.expr) -> bool:
    """Whether a call's receiver starts at ``TagSuggestion.objects`` (through any filters)."""
    while isinstance(node, ast.Call | ast.Attribute):
        if isinstance(node, ast.Attribute) and _dotted(node).endswith("TagSuggestion.objects"):
            return True
        node = node.func if isinstance(node, ast.Call) else node.value
    return False


def test_no_code_but_the_queues_service_changes_a_suggestion():
    """A suggestion is changed (``TagSuggestion.objects…update/delete/bulk_update``) in
    ``mirror/services.py`` only, and the Anvil's change form saves a person's edits through
    ``suggestion_edit``, not the model's own ``save``."""
    from anvil.suggestions import TagSuggestionAdmin

    root = Path(django_settings.BASE_DIR)
    service = root / "mirror" / "services.py"
    found = []
    for app in apps.get_app_configs():
        folder = Path(app.path)
        if not folder.is_relative_to(root) or ".venv" in folder.parts:
            continue
        for path in sorted(folder.rglob("*.py")):
            if path == service or {"migrations", "tests"} & set(path.relative_to(root).parts):
                continue
            for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
                if (
                    isinstance(node, ast.Call)
                    and isinstance(node.func, ast.Attribute)
                    and node.func.attr in CHANGED
                    and _suggestion_chain(node.func.value)
                ):
                    found.append(f"{path.relative_to(root)}:{node.lineno}")
    assert found == []
    assert "save_model" in vars(TagSuggestionAdmin)


def test_a_forgotten_suggestion_is_rejected_and_its_words_are_never_staged_again(
    admin_user, suggestion
):
    forgotten = suggestion_forget(suggestion_id=suggestion.pk, user_id=admin_user.pk, by="owner")

    assert forgotten.status == "rejected"
    assert Forgotten.objects.get().source == f"suggestion #{suggestion.pk}"
    again = [Staged(type="pin", content="tea with no sugar"), Staged(type="pin", content="rain")]
    summary = Summary.objects.create(level="L0", first_event_id=41, last_event_id=60, content="s")
    staged = suggestions_stage(proposer=Proposer.MIRROR, summary=summary, suggestions=again)
    assert [s.content for s in staged] == ["rain"]
    by_compass = suggestions_stage(proposer=Proposer.COMPASS, suggestions=again)
    assert [s.content for s in by_compass] == ["rain"]  # whoever proposes it


def test_a_forgotten_working_memory_items_words_are_never_staged_again():
    item = WorkingMemory.objects.create(type="pin", content="the old alarm code is 2468")

    dropped = working_memory_forget(
        item_ids=[item.pk], by="owner", user_id=None, now=timezone.now()
    )

    item.refresh_from_db()
    assert dropped == [item.pk] and item.status == "dropped"
    staged = suggestions_stage(
        proposer=Proposer.COMPASS,
        suggestions=[Staged(type="pin", content="the alarm code is 2468")],
    )
    assert staged == []
