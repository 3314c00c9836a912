import base64
from pathlib import Path

import pytest
from django.core.files.storage import FileSystemStorage

from bench.fakeapi import FakeError, FakeReply
from gem.draft import DraftConflict, DraftError, draft_parse, part_digest
from gem.models import Fragment
from ledger.models import ModelCall
from loom.models import CallStatus, DraftState, InboxImage, LoomCall, LoomPrompt, SessionImage
from loom.services import (
    LoomError,
    inbox_add,
    loom_call_again,
    loom_call_retry,
    loom_call_start,
    loom_draft_apply,
    loom_draft_drop,
    prompt_current,
    session_close,
    session_create,
    session_fragment_add,
    session_images_take,
)
from mirror.models import Proposer, SuggestionStatus, TagSuggestion
from tests.loom.fixtures import INVENTORY_DRAFT, answer, png_bytes, png_upload

pytestmark = pytest.mark.django_db(databases="__all__")


def test_it_sends_the_cataloguer_the_lens_extract_and_the_chosen_photos(
    fake_api, session, settings
):
    fake_api.push(FakeReply(answer(INVENTORY_DRAFT)))
    image = session.images.get()
    call = loom_call_start(
        agent="cataloguer",
        fragment_key="lantern",
        question="Check the panes",
        session_id=session.pk,
        image_ids=[image.pk],
    )
    call.refresh_from_db()
    assert call.status == CallStatus.DONE, call.error
    (body,) = fake_api.requests
    assert body["model"] == settings.LOOM_MODEL
    assert body["max_tokens"] == settings.AGENT_MAX_TOKENS
    assert "tools" not in body
    assert "the Cataloguer" in body["system"][0]["text"]
    blocks = body["messages"][0]["content"]
    assert [b["type"] for b in blocks] == ["image", "text"]
    assert base64.b64decode(blocks[0]["source"]["data"]) == png_bytes()
    assert "# lantern" in blocks[1]["text"] and "# shelf" in blocks[1]["text"]
    assert "# star" not in blocks[1]["text"]
    assert "Check the panes" in blocks[1]["text"]
    assert "The identities who speak: hasuki (person), " in blocks[1]["text"]
    assert "claude (companion)" in blocks[1]["text"]
    assert call.sources["neighbours"] == ["shelf"]
    assert call.sources["images"] == [image.pk]
    assert call.draft_state == DraftState.PROPOSED
    assert "a blue glass pane" in call.draft
    assert "a blue glass pane" not in Fragment.objects.get(key="lantern").inventory
    assert list(ModelCall.objects.values_list("component", flat=True)) == ["loom-cataloguer"]


@pytest.mark.parametrize("allowed", [True, False])
def test_it_offers_web_search_only_to_the_researcher_and_only_when_allowed(
    fake_api, gem, settings, allowed
):
    settings.WEB_SEARCH = allowed
    fake_api.responder = lambda body: FakeReply(answer(""), web_searches=2 if allowed else 0)
    researcher = loom_call_start(agent="researcher", fragment_key="lantern", question="Maker?")
    weaver = loom_call_start(agent="weaver", fragment_key="lantern", question="")
    researched, woven = fake_api.requests
    assert ("tools" in researched) is allowed
    if allowed:
        assert researched["tools"][0]["name"] == "web_search"
    assert "tools" not in woven
    researcher.refresh_from_db()
    assert researcher.sources["web_search"] == {"offered": allowed, "searches": 2 * allowed}
    weaver.refresh_from_db()
    assert "web_search" not in weaver.sources
    assert sorted(ModelCall.objects.values_list("component", flat=True)) == [
        "loom-researcher",
        "loom-weaver",
    ]


def test_it_stages_the_weavers_patterns_in_the_queue(fake_api, gem):
    fake_api.push(
        FakeReply(
            answer("", patterns="- She names every lamp after a star.\n  reason: lantern, star")
        )
    )
    call = loom_call_start(agent="weaver", fragment_key="lantern", question="")
    call.refresh_from_db()
    (suggestion,) = TagSuggestion.objects.all()
    assert call.suggestion_ids == [suggestion.pk]
    assert suggestion.proposer == Proposer.LOOM
    assert suggestion.status == SuggestionStatus.PENDING
    assert (suggestion.type, suggestion.content, suggestion.reason) == (
        "pattern",
        "She names every lamp after a star.",
        "lantern, star",
    )
    assert call.draft_state == ""  # notes only: nothing to apply


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        (
            answer("# lantern\n\n## colour\n\nred", patterns="- a pattern"),
            "line 7 of the answer: “## colour” under “lantern” is not a section",
        ),
        (
            answer("# lamp\n\n## inventory\n\nbrass", patterns="- a pattern"),
            "the draft names “lamp”, which the Gem does not have",
        ),
        (
            answer("# star\n\n## inventory\n\nbright", patterns="- a pattern"),
            "the draft names “star”, which it was not given",
        ),
        ("Just some thoughts, no sections.", "the answer has no “=== draft ===” line"),
        (FakeError(400, "prompt is too long"), "Claude's API rejected the request"),
    ],
)
def test_it_fails_a_call_it_cannot_use_with_nothing_staged_and_a_retry_works(
    fake_api, gem, reply, message
):
    fake_api.push(FakeReply(reply) if isinstance(reply, str) else reply)
    call = loom_call_start(agent="weaver", fragment_key="lantern", question="")
    call.refresh_from_db()
    assert call.status == CallStatus.FAILED
    assert message in call.error
    assert call.error.startswith("The Weaver")
    assert (call.draft, call.draft_state, call.suggestion_ids) == ("", "", [])
    assert not TagSuggestion.objects.exists()

    fake_api.push(FakeReply(answer(INVENTORY_DRAFT)))
    loom_call_retry(call_id=call.pk)
    call.refresh_from_db()
    assert (call.status, call.error, call.draft_state) == (CallStatus.DONE, "", "proposed")
    assert call.attempts == 2


def test_it_retries_only_a_failed_call(fake_api, gem):
    fake_api.push(FakeReply(answer(INVENTORY_DRAFT)))
    call = loom_call_start(agent="weaver", fragment_key="lantern", question="")
    with pytest.raises(LoomError, match="Only a call that failed"):
        loom_call_retry(call_id=call.pk)


def test_it_refuses_an_unknown_fragment_and_photos_for_another_agent(session):
    with pytest.raises(LoomError, match=r"No fragment “lanterns”.*lantern"):
        loom_call_start(agent="weaver", fragment_key="lanterns", question="")
    with pytest.raises(LoomError, match="Only the Cataloguer"):
        loom_call_start(
            agent="weaver",
            fragment_key="lantern",
            question="",
            session_id=session.pk,
            image_ids=[session.images.get().pk],
        )
    assert not LoomCall.objects.exists()


def test_it_answers_offline_with_a_labelled_placeholder_draft(gem, settings):
    call = loom_call_start(agent="cataloguer", fragment_key="lantern", question="Look")
    call.refresh_from_db()
    assert call.status == CallStatus.DONE, call.error
    assert call.notes.startswith("(offline Loom)")
    assert "(offline Loom) placeholder from the Cataloguer: Look" in call.draft
    assert ModelCall.objects.get().offline


def test_it_uses_the_newest_saved_prompt_and_records_its_version(fake_api, gem):
    assert "the Researcher" in prompt_current("researcher").text
    saved = LoomPrompt.objects.create(kind="researcher", content="Be brief.")
    fake_api.push(FakeReply(answer("")))
    call = loom_call_start(agent="researcher", fragment_key="lantern", question="")
    assert fake_api.requests[0]["system"][0]["text"] == "Be brief."
    call.refresh_from_db()
    assert call.sources["prompt"] == saved.pk


def test_a_session_taking_inbox_photos_moves_them_and_empties_the_inbox(gem, media):
    session = session_create(topic="  The   lantern ")
    assert session.topic == "The lantern"
    first, second = inbox_add(uploads=[(png_upload("a.png"), "png"), (png_upload("b.png"), "png")])
    inbox_files = [Path(media) / first.image.name, Path(media) / second.image.name]
    assert all(path.exists() for path in inbox_files)
    taken = session_images_take(session_id=session.pk, image_ids=[first.pk, second.pk])
    assert not InboxImage.objects.exists()
    assert not any(path.exists() for path in inbox_files)
    assert [image.original_name for image in taken] == ["a.png", "b.png"]
    for image in taken:
        assert image.image.name.startswith(f"loom/sessions/{session.pk}/")
        assert (Path(media) / image.image.name).read_bytes() == png_bytes()
    assert not list((Path(media) / "loom" / "inbox").iterdir())


def test_the_inbox_keeps_no_more_than_its_most(media, settings):
    settings.LOOM_INBOX_MAX_PHOTOS = 3
    inbox_add(uploads=[(png_upload("a.png"), "png"), (png_upload("b.png"), "png")])
    with pytest.raises(LoomError, match="has 2 already: send at most 1 photo, or take some"):
        inbox_add(uploads=[(png_upload("c.png"), "png"), (png_upload("d.png"), "png")])
    inbox_add(uploads=[(png_upload("c.png"), "png")])
    with pytest.raises(LoomError, match="The inbox holds 3 photos, its most: take some into"):
        inbox_add(uploads=[(png_upload("d.png"), "png")])
    assert InboxImage.objects.count() == 3
    assert len(list((Path(media) / "loom" / "inbox").iterdir())) == 3


def test_photos_that_another_upload_overtook_are_refused_and_their_files_removed(
    media, settings, monkeypatch
):
    settings.LOOM_INBOX_MAX_PHOTOS = 2
    (first,) = inbox_add(uploads=[(png_upload("a.png"), "png")])
    save = FileSystemStorage.save

    def save_overtaken(storage, name, content, **kwargs):
        InboxImage.objects.create(image="loom/inbox/other.png", original_name="other.png")
        return save(storage, name, content, **kwargs)

    monkeypatch.setattr(FileSystemStorage, "save", save_overtaken)
    with pytest.raises(LoomError, match="its most"):
        inbox_add(uploads=[(png_upload("b.png"), "png")])
    assert list((Path(media) / "loom" / "inbox").iterdir()) == [Path(media) / first.image.name]


def test_a_photo_whose_taking_fails_stays_in_the_inbox(gem, media, monkeypatch):
    session = session_create(topic="The lantern")
    (inbox,) = inbox_add(uploads=[(png_upload(), "png")])

    def broken(**kwargs):
        raise RuntimeError("disk gone")

    monkeypatch.setattr(SessionImage.objects, "create", broken)
    with pytest.raises(RuntimeError):
        session_images_take(session_id=session.pk, image_ids=[inbox.pk])
    inbox.refresh_from_db()
    assert (Path(media) / inbox.image.name).read_bytes() == png_bytes()
    assert not list((Path(media) / "loom" / "sessions").rglob("*.png"))


def test_a_closed_session_stays_readable_and_refuses_changes(session):
    loom_call_start(agent="weaver", fragment_key="lantern", question="", session_id=session.pk)
    session_close(session_id=session.pk)
    session.refresh_from_db()
    assert session.status == "closed" and session.closed_at is not None
    assert session.calls.count() == 1 and session.images.count() == 1
    with pytest.raises(LoomError, match="closed"):
        session_fragment_add(session_id=session.pk, key="shelf")
    with pytest.raises(LoomError, match="closed"):
        loom_call_start(agent="weaver", fragment_key="lantern", question="", session_id=session.pk)


def test_a_dropped_draft_changes_nothing_and_cannot_be_dropped_twice(gem, django_user_model):
    person = django_user_model.objects.create_user(username="owner")
    call = loom_call_start(agent="cataloguer", fragment_key="lantern", question="")
    loom_draft_drop(call_id=call.pk, user_id=person.pk)
    call.refresh_from_db()
    assert (call.draft_state, call.decided_by) == (DraftState.DROPPED, person)
    assert Fragment.objects.get(key="lantern").inventory == "- brass, dented"
    with pytest.raises(LoomError, match="already dropped"):
        loom_draft_drop(call_id=call.pk, user_id=person.pk)


def test_a_photo_whose_file_is_gone_is_named_and_the_others_are_taken(gem, media):
    session = session_create(topic="The lantern")
    first, second = inbox_add(uploads=[(png_upload("a.png"), "png"), (png_upload("b.png"), "png")])
    (Path(media) / second.image.name).unlink()
    with pytest.raises(LoomError, match=r"“b\.png” has no file any more.*1 taken before it"):
        session_images_take(session_id=session.pk, image_ids=[first.pk, second.pk])
    assert list(session.images.values_list("original_name", flat=True)) == ["a.png"]
    assert list(InboxImage.objects.all()) == [second]


# --- Drafts written against what the agent read ------------------------------------------------

RED_WICK_DRAFT = "# lantern\n\n## inventory\n\n- brass, dented\n- a red wick\n"


def _done(fake_api, draft: str) -> LoomCall:
    fake_api.push(FakeReply(answer(draft)))
    call = loom_call_start(agent="cataloguer", fragment_key="lantern", question="The panes?")
    call.refresh_from_db()
    assert call.status == CallStatus.DONE, call.error
    return call


def test_a_calls_draft_says_what_it_was_written_against_and_keeps_what_the_agent_read(
    fake_api, gem
):
    call = _done(fake_api, INVENTORY_DRAFT)
    (fragment,) = draft_parse(call.draft).fragments
    assert fragment.tiers == {"inventory": "- brass, dented\n- a blue glass pane"}
    assert fragment.base["inventory"] == part_digest("inventory", "- brass, dented")
    assert "# lantern" in call.draft_base and "# shelf" in call.draft_base


def test_two_drafts_of_one_tier_the_second_refused_after_the_first_and_nothing_lost(
    fake_api, gem, django_user_model
):
    person = django_user_model.objects.create_user(username="owner")
    first, second = _done(fake_api, INVENTORY_DRAFT), _done(fake_api, RED_WICK_DRAFT)
    loom_draft_apply(call_id=first.pk, user=person, text=first.draft)
    with pytest.raises(DraftConflict) as refused:
        loom_draft_apply(call_id=second.pk, user=person, text=second.draft)
    (conflict,) = refused.value.check.conflicts
    assert conflict.name == "lantern:inventory"
    assert (conflict.base, conflict.now) == (
        "- brass, dented",
        "- brass, dented\n- a blue glass pane",
    )
    first.refresh_from_db()
    second.refresh_from_db()
    assert (first.draft_state, second.draft_state) == (DraftState.APPLIED, DraftState.PROPOSED)
    assert "a blue glass pane" in first.draft and "a red wick" in second.draft
    assert Fragment.objects.get(key="lantern").inventory == "- brass, dented\n- a blue glass pane"


def test_a_draft_over_a_changed_fragment_applies_part_by_part(fake_api, gem, django_user_model):
    person = django_user_model.objects.create_user(username="owner")
    call = _done(fake_api, "# lantern\n\n## ambient\n\nA brass lantern.\n\n" + RED_WICK_DRAFT[11:])
    Fragment.objects.filter(key="lantern").update(inventory="- brass, polished")
    with pytest.raises(DraftError, match="lantern:inventory changed since"):
        loom_draft_apply(call_id=call.pk, user=person, text=call.draft, parts={"lantern:inventory"})
    loom_draft_apply(call_id=call.pk, user=person, text=call.draft, parts={"lantern:ambient"})
    lantern = Fragment.objects.get(key="lantern")
    assert (lantern.ambient, lantern.inventory) == ("A brass lantern.", "- brass, polished")


def test_asking_again_reads_the_fragment_as_it_is_now_and_keeps_the_first_draft(fake_api, gem):
    first = _done(fake_api, RED_WICK_DRAFT)
    Fragment.objects.filter(key="lantern").update(inventory="- brass, polished")
    fake_api.push(FakeReply(answer(INVENTORY_DRAFT)))
    again = loom_call_again(call_id=first.pk)
    again.refresh_from_db()
    assert (again.agent, again.question, again.status) == ("cataloguer", "The panes?", "done")
    assert "- brass, polished" in fake_api.requests[-1]["messages"][0]["content"][-1]["text"]
    first.refresh_from_db()
    assert (first.draft_state, "a red wick" in first.draft) == (DraftState.PROPOSED, True)
