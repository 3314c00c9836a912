import json

import pytest
from django.contrib.admin.models import ADDITION, LogEntry
from django.contrib.auth.models import Permission, User
from django.urls import reverse

from anvil.proposals import ProposalError, WakeConflict, proposal_apply, proposal_drop
from gem.draft import DraftError, draft_parse
from gem.models import AmbientProse, Fragment, WakeText
from gem.selectors import ambient_prose_current, wake_text_current
from tests.anvil.test_bridges import card_png
from transfer.bridges import PREVIEW_LISTED, bridge_import, bridge_plan, bundle_read
from transfer.bundle import LoreEntry
from transfer.formats.card import card_dump
from transfer.models import ImportedProposal, ProposalKind, ProposalState

pytestmark = pytest.mark.django_db(databases="__all__")

DESCRIPTION = "A keeper of the north light who speaks softly."


@pytest.fixture
def proposals() -> dict[str, ImportedProposal]:
    """A character card's import: a draft of one fragment and a wake text, both pending."""
    data = card_png()
    plan = bridge_plan(bundle_read(format="card", data=data), file_name="s.png", format="card")
    bridge_import(plan, file_sha256="0" * 64)
    return {proposal.kind: proposal for proposal in ImportedProposal.objects.all()}


@pytest.fixture
def draft(proposals) -> ImportedProposal:
    return proposals[ProposalKind.DRAFT]


@pytest.fixture
def wake(proposals) -> ImportedProposal:
    return proposals[ProposalKind.WAKE]


def url(name: str, proposal) -> str:
    return reverse(f"admin:transfer-proposal-{name}", args=[proposal.pk])


def page_of(proposal) -> str:
    return reverse("admin:transfer_importedproposal_change", args=[proposal.pk])


def test_a_draft_proposal_shows_its_diff_and_applies_into_the_gem_once(admin_client, draft):
    page = admin_client.get(page_of(draft))
    assert "new fragment" in page.text and "A brass lantern, dented" in page.text
    assert not Fragment.objects.exists()

    response = admin_client.post(url("apply", draft), {"next": page_of(draft)})
    assert response["Location"] == page_of(draft)
    (fragment,) = Fragment.objects.all()
    assert "A brass lantern, dented" in " ".join(
        [fragment.ambient, fragment.recognition, fragment.inventory]
    )
    draft.refresh_from_db()
    assert draft.state == ProposalState.APPLIED and draft.decided_by.username == "admin"
    assert draft.decided_at is not None and draft.applied_text == ""
    assert LogEntry.objects.filter(object_id=fragment.key, action_flag=ADDITION).exists()

    again = admin_client.post(url("apply", draft), follow=True)
    assert "was already applied by admin" in again.text
    assert Fragment.objects.count() == 1
    assert "Applied by admin" in admin_client.get(page_of(draft)).text


def test_a_wake_proposal_shows_the_wake_text_in_use_beside_the_proposed_one(admin_client, wake):
    in_use = wake_text_current("wake")
    page = admin_client.get(page_of(wake))
    assert "in use now" in page.text and "with the proposal" in page.text
    assert DESCRIPTION in page.text

    admin_client.post(url("apply", wake))
    newest = WakeText.objects.filter(kind="wake").order_by("-created_at", "-id").first()
    assert newest.content.startswith(in_use.rstrip())
    assert DESCRIPTION in newest.content and newest.author.username == "admin"
    logged = LogEntry.objects.get(object_id=str(newest.pk))
    assert logged.action_flag == ADDITION and "added" in logged.change_message
    wake.refresh_from_db()
    assert wake.state == ProposalState.APPLIED


def test_an_edited_draft_is_previewed_then_applied_and_both_texts_are_kept(admin_client, draft):
    edit = admin_client.get(url("edit", draft))
    assert "A brass lantern, dented" in edit.text and "<textarea" in edit.text
    edited = draft.text.replace("dented on one side", "polished")
    preview = admin_client.post(url("edit", draft), {"text": edited})
    assert "What it changes" in preview.text and "polished" in preview.text
    assert not Fragment.objects.exists()

    admin_client.post(url("apply", draft), {"text": edited})
    draft.refresh_from_db()
    assert draft.applied_text == edited and "dented on one side" in draft.text
    fragment = Fragment.objects.get()
    assert "polished" in fragment.ambient + fragment.recognition + fragment.inventory


def test_an_edited_wake_text_is_applied_as_edited(admin_client, wake):
    preview = admin_client.post(url("edit", wake), {"text": "# Who you are\n\nA quiet keeper."})
    assert "A quiet keeper." in preview.text and "with the proposal" in preview.text
    admin_client.post(url("apply", wake), {"text": "# Who you are\n\nA quiet keeper."})
    assert wake_text_current("wake").endswith("# Who you are\n\nA quiet keeper.\n")
    wake.refresh_from_db()
    assert wake.applied_text == "# Who you are\n\nA quiet keeper."


def test_a_draft_that_cannot_be_applied_stays_pending_and_says_its_line(admin_client, draft):
    broken = "## ambient\nno fragment heads this tier\n"
    response = admin_client.post(url("apply", draft), {"text": broken})
    assert response.status_code == 200
    assert "line 1" in response.text
    assert broken.strip().splitlines()[1] in response.text  # the text is kept for fixing
    draft.refresh_from_db()
    assert draft.state == ProposalState.PENDING and draft.decided_at is None
    assert not Fragment.objects.exists()


def test_a_dropped_proposal_writes_nothing_and_cannot_be_applied_after(admin_client, proposals):
    wakes_before = WakeText.objects.count()
    for proposal in proposals.values():
        response = admin_client.post(url("drop", proposal), follow=True)
        assert "nothing of it was written" in response.text
        proposal.refresh_from_db()
        assert proposal.state == ProposalState.DROPPED
    assert not Fragment.objects.exists() and WakeText.objects.count() == wakes_before
    refused = admin_client.post(url("apply", proposals["wake"]), follow=True)
    assert "was already dropped" in refused.text
    assert WakeText.objects.count() == wakes_before


def test_a_proposal_is_decided_once_whoever_comes_second(draft):
    admin = User.objects.create_superuser("first", password="pw")
    second = User.objects.create_superuser("second", password="pw")
    proposal_drop(proposal_id=draft.pk, user=admin)
    with pytest.raises(ProposalError, match="already dropped by first"):
        proposal_apply(proposal_id=draft.pk, user=second)
    with pytest.raises(ProposalError, match="already dropped"):
        proposal_drop(proposal_id=draft.pk, user=second)
    with pytest.raises(ProposalError, match="no proposal 999"):
        proposal_drop(proposal_id=999, user=second)


def test_the_service_leaves_a_draft_pending_when_it_cannot_be_applied(draft):
    admin = User.objects.create_superuser("first", password="pw")
    with pytest.raises(DraftError):
        proposal_apply(proposal_id=draft.pk, user=admin, text="## ambient\nno heading\n")
    draft.refresh_from_db()
    assert draft.state == ProposalState.PENDING


def test_deciding_takes_the_draft_pages_and_the_wake_texts_permissions(client, draft, wake):
    staff = User.objects.create_user("curator", password="pw", is_staff=True)
    for codename in ("use_memory", "view_importedproposal", "add_waketext"):
        staff.user_permissions.add(Permission.objects.get(codename=codename))
    client.force_login(staff)
    page = client.get(page_of(draft))
    assert page.status_code == 200 and "takes the right to change fragments" in page.text
    for name in ("apply", "drop"):
        assert client.post(url(name, draft)).status_code == 403
    assert client.get(url("edit", draft)).status_code == 403
    assert client.post(url("apply", wake)).status_code == 302
    wake.refresh_from_db()
    assert wake.state == ProposalState.APPLIED
    for codename in ("add_fragment", "change_fragment"):
        staff.user_permissions.add(Permission.objects.get(codename=codename))
    assert client.post(url("drop", draft)).status_code == 302


def test_the_buttons_answer_only_a_post_and_a_list_offers_no_add(admin_client, draft):
    assert admin_client.get(url("apply", draft)).status_code == 405
    assert admin_client.get(url("drop", draft)).status_code == 405
    assert admin_client.get(reverse("admin:transfer_importedproposal_add")).status_code == 403
    listed = admin_client.get(reverse("admin:transfer_importedproposal_changelist"))
    assert draft.title in listed.text


def test_a_wake_text_already_in_use_is_applied_without_a_second_copy(admin_client, wake):
    in_use = WakeText.objects.filter(kind="wake").order_by("-created_at", "-id").first()
    WakeText.objects.create(kind="wake", content=f"{in_use.content}\n\n{wake.text}\n")
    versions = WakeText.objects.count()
    response = admin_client.post(url("apply", wake), follow=True)
    assert "the wake text in use held it already, nothing changed" in response.text
    assert WakeText.objects.count() == versions
    wake.refresh_from_db()
    assert wake.state == ProposalState.APPLIED


def test_a_draft_of_many_fragments_shows_its_first_and_counts_the_rest(admin_client):
    entries = [
        LoreEntry(
            name=f"Cove {n}",
            keys=(),
            secondary_keys=(),
            content=f"The cove numbered {n}.",
            constant=False,
            enabled=True,
            where=f"entries[{n}]",
        )
        for n in range(PREVIEW_LISTED + 7)
    ]
    book = card_dump(name="Coves", description="", entries=entries, png=False)
    plan = bridge_plan(bundle_read(format="card", data=book), file_name="c.json", format="card")
    bridge_import(plan, file_sha256="0" * 64)
    proposal = ImportedProposal.objects.get(kind=ProposalKind.DRAFT)

    page = admin_client.get(page_of(proposal))

    assert page.text.count("— new fragment") == PREVIEW_LISTED
    assert "…and 7 more fragments, all in the draft" in page.text
    assert url("edit", proposal) in page.text


def test_a_proposal_is_edited_on_the_page_a_loom_draft_is(admin_client, draft, wake):
    for proposal in (draft, wake):
        response = admin_client.post(url("edit", proposal), {"text": ""})
        assert next(t.name for t in response.templates) == "admin/anvil/proposed_edit.html"
        assert "This field is required." in response.text
        assert response.context["diff"] is None and response.context["wake_diff"] is None
    page = admin_client.get(url("edit", draft))
    assert page.context["words"].apply == "Apply this text"
    assert "A brass lantern, dented" in page.text
    assert page.context["apply_url"] == url("apply", draft)


def test_a_wake_proposal_is_refused_after_the_wake_text_changed_until_saved_against_it(
    admin_client, wake
):
    assert wake.base == wake_text_current("wake")
    WakeText.objects.create(kind="wake", content="Written since the import.\n")
    versions = WakeText.objects.count()
    with pytest.raises(WakeConflict):
        proposal_apply(proposal_id=wake.pk, user=User.objects.get(username="admin"))

    page = admin_client.post(url("apply", wake))
    assert "The wake text in use changed since this was proposed" in page.text
    assert "<ins>Written</ins> since the" in str(page.context["wake_moved"])
    assert page.context["today"] == "Written since the import.\n"
    wake.refresh_from_db()
    assert (wake.state, WakeText.objects.count()) == (ProposalState.PENDING, versions)

    saved = admin_client.post(url("edit", wake), {"text": wake.text, "rebase": "1"})
    against = saved.context["against"]
    assert against and not saved.context.get("wake_moved")
    admin_client.post(url("apply", wake), {"text": wake.text, "against": against})
    newest = WakeText.objects.filter(kind="wake").order_by("-created_at", "-id").first()
    assert newest.content.startswith("Written since the import.")
    assert DESCRIPTION in newest.content


def test_a_wake_proposal_without_a_base_is_applied_with_a_note(admin_client, wake):
    ImportedProposal.objects.filter(pk=wake.pk).update(base="")
    WakeText.objects.create(kind="wake", content="Written since the import.\n")
    page = admin_client.get(url("edit", wake))
    assert "it could not be checked against changes made since" in page.text
    admin_client.post(url("apply", wake))
    wake.refresh_from_db()
    assert wake.state == ProposalState.APPLIED


def test_a_proposals_card_says_when_it_would_overwrite_what_changed_since(
    admin_client, draft, wake
):
    key = draft_parse(draft.text).fragments[0].key
    Fragment.objects.create(key=key, recognition="Written meanwhile.")
    WakeText.objects.create(kind="wake", content="Written since the import.\n")

    card = admin_client.get(page_of(draft))
    wake_card = admin_client.get(page_of(wake))

    assert f"“{key}” changed since this draft was written" in card.text
    assert "The wake text in use changed since this was proposed." in wake_card.text


def prose_proposed() -> ImportedProposal:
    """The ambient-prose addition an import of a lorebook with one constant entry proposes."""
    book = {
        "entries": {"0": {"key": ["harbour"], "content": "Where ships rest.", "constant": True}}
    }
    data = json.dumps(book).encode()
    plan = bridge_plan(
        bundle_read(format="sillytavern", data=data), file_name="b", format="sillytavern"
    )
    bridge_import(plan, file_sha256="0" * 64)
    return ImportedProposal.objects.get(kind=ProposalKind.PROSE)


def test_an_ambient_prose_addition_is_applied_as_a_new_version_naming_the_keys(admin_client):
    AmbientProse.objects.create(content="She keeps [tea] close.")
    prose = prose_proposed()

    page = admin_client.get(page_of(prose))
    assert "the ambient prose in use, and as it would be" in page.text
    assert "apply the draft first" in page.text
    response = admin_client.post(url("apply", prose), follow=True)
    assert "the ambient prose has a new version" in response.text
    assert ambient_prose_current() == (
        "She keeps [tea] close.\n\nAlways in mind from the SillyTavern lorebook: [harbour].\n"
    )
    assert AmbientProse.objects.count() == 2


def test_an_ambient_prose_addition_is_refused_after_the_prose_changed(admin_client):
    AmbientProse.objects.create(content="As the import found it.")
    prose = prose_proposed()
    AmbientProse.objects.create(content="Written since the import.")

    with pytest.raises(WakeConflict, match="The ambient prose in use changed"):
        proposal_apply(proposal_id=prose.pk, user=User.objects.get(username="admin"))
    assert AmbientProse.objects.count() == 2
    assert "The ambient prose in use changed since" in admin_client.get(page_of(prose)).text


def test_applying_names_the_proposal_with_no_quotation_nested_in_its_like(admin_client, draft):
    assert "“" in draft.title  # "1 fragment from the character card “…”"
    response = admin_client.post(url("apply", draft), follow=True)
    (said,) = (str(message) for message in response.context["messages"])
    inner = draft.title.replace("“", "‘").replace("”", "’")
    assert said.startswith(f"Applied “{inner}”: ")
    assert said.count("“") == 1
