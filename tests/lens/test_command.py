"""``manage.py lens``: keys, intersections, --wm, --summaries and ``diff``, Markdown out."""

import re
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from gem.models import Fragment, FragmentEdge, WorkingMemory
from mirror.models import Summary

pytestmark = pytest.mark.django_db(databases="__all__")


def lens(*args: str) -> str:
    out = StringIO()
    call_command("lens", *args, stdout=out)
    return out.getvalue()


@pytest.fixture
def gem():
    fairy = Fragment.objects.create(key="fairy", ambient="A small light.")
    well = Fragment.objects.create(key="well", ambient="Deep.")
    Fragment.objects.create(key="diff", ambient="Spelt like a word.")
    FragmentEdge.objects.create(source=fairy, target=well, relation="lives in")


def test_one_key_prints_the_fragment(gem):
    out = lens("fairy")
    assert out.startswith("# fairy\n\n## ambient\n\nA small light.\n")
    assert "- → well: lives in" in out


def test_several_keys_print_what_connects_them(gem):
    out = lens("fairy", "well", "--depth", "1")
    assert out.startswith("Lens: what connects fairy, well (paths of at most 1 edge)")
    assert "- fairy —lives in→ well" in out


def test_wm_and_summaries_can_come_alone_or_after_a_fragment(gem):
    WorkingMemory.objects.create(type="pin", content="bring the lantern")
    Summary.objects.create(level="L0", first_event_id=3, last_event_id=9, content="Snow.")

    assert "bring the lantern" in lens("--wm")
    assert "## L0 · events 3–9" in lens("--summaries")
    both = lens("fairy", "--wm", "--summaries")
    assert both.index("# fairy") < both.index("# Working memory") < both.index("# Summaries")


def test_a_key_spelt_like_a_word_is_reached_with_key(gem):
    assert lens("--key", "diff").startswith("# diff\n")


def test_an_unknown_key_is_an_error_with_close_matches(gem):
    with pytest.raises(CommandError, match="No fragment “fairi” \\(did you mean fairy\\?\\)"):
        lens("fairi")


def test_nothing_asked_is_an_error():
    with pytest.raises(CommandError, match="Name a fragment key"):
        lens()


def test_diff_shows_what_a_draft_would_change_and_changes_nothing(gem, tmp_path):
    draft = tmp_path / "draft.md"
    draft.write_text(lens("fairy").replace("A small light.", "A brighter light."))

    out = lens("diff", str(draft))

    assert "-A small light.\n+A brighter light." in out
    assert Fragment.objects.get(key="fairy").ambient == "A small light."
    draft.write_text(lens("fairy"))
    assert lens("diff", str(draft)) == "No change: the Gem already holds this draft.\n"


def test_one_key_prints_its_triggers_and_diff_shows_them_changed(gem, tmp_path):
    Fragment.objects.filter(key="fairy").update(triggers=["wisp"])
    assert "\n## triggers\n\n- wisp\n\n## edges\n" in lens("fairy")
    assert "## triggers" not in lens("well")
    draft = tmp_path / "draft.md"
    draft.write_text(lens("fairy").replace("- wisp\n", "- wisp\n- the little light\n"))

    out = lens("diff", str(draft))

    assert "--- fairy · triggers (now)\n+++ fairy · triggers (draft)" in out
    assert " - wisp\n+- the little light" in out
    assert Fragment.objects.get(key="fairy").triggers == ["wisp"]


def test_diff_says_when_a_fragment_changed_since_the_draft_was_written(gem, tmp_path):
    draft = tmp_path / "draft.md"
    draft.write_text(lens("fairy").replace("A small light.", "A brighter light."))
    Fragment.objects.filter(key="fairy").update(ambient="A humming light.")
    out = lens("diff", str(draft))
    assert "“fairy” changed since this draft was written (conflicting: ambient)." in out
    draft.write_text("# fairy\n\n## ambient\n\nBlue.\n")
    assert "could not be checked against changes made since" in lens("diff", str(draft))


def test_diff_of_a_bad_draft_names_the_file_and_line(gem, tmp_path):
    draft = tmp_path / "draft.md"
    draft.write_text("# fairy\n\n## mood\n")
    with pytest.raises(CommandError, match=re.escape(f"{draft}: line 3: “## mood” under “fairy”")):
        lens("diff", str(draft))
    with pytest.raises(CommandError, match="Cannot read the draft"):
        lens("diff", str(tmp_path / "missing.md"))
    with pytest.raises(CommandError, match=r"Usage: manage\.py lens diff DRAFT\.md"):
        lens("diff")


SQLITE_ONLY = {
    "DATABASE_URL": "",
    **{f"{alias}_DATABASE_URL": "" for alias in ("EVENTS", "SUMMARIES", "SNAPSHOTS")},
}


@pytest.mark.store_free
def test_it_runs_as_a_command_line(manage, tmp_path, sqlite_stores_copy):
    sqlite_stores_copy(tmp_path / "data")
    result = manage("lens", "nothing-here", env=SQLITE_ONLY)
    assert result.returncode == 1
    assert "No fragment “nothing-here”." in result.stderr


def test_options_may_come_before_or_after_the_keys(gem):
    before = lens("--depth", "1", "--wm", "fairy", "well")
    after = lens("fairy", "well", "--depth", "1", "--wm")
    assert before == after
    assert "(paths of at most 1 edge)" in before and "# Working memory" in before
    assert "(paths of at most 2 edges)" in lens("--depth", "1", "fairy", "well", "--depth", "2")
