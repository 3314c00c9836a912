"""``manage.py export_to``: the fragments as a SillyTavern lorebook and as a Character Card V3
(JSON or PNG), each read back as the same fragments."""

import io
import json

import pytest
from django.core.management import CommandError, call_command

from gem.models import AmbientProse, Fragment, FragmentEdge
from transfer.bridges import bridge_plan
from transfer.formats.card import card_read
from transfer.formats.sillytavern import sillytavern_read

pytestmark = pytest.mark.django_db(databases="__all__")


@pytest.fixture
def gem():
    Fragment.objects.create(key="fairy", ambient="A small light.", recognition="Keys: sprite, wisp")
    Fragment.objects.create(key="well", recognition="Deep.", inventory="Deep.\n\nAnd old.")
    FragmentEdge.objects.create(source_id="fairy", target_id="well", relation="lives in")
    AmbientProse.objects.create(content="She knows the [fairy].")


def test_a_lorebook_holds_every_fragment_by_its_keys_and_reads_back_unchanged(gem, tmp_path):
    path = tmp_path / "world.json"
    out = io.StringIO()
    call_command("export_to", "sillytavern", str(path), stdout=out)

    assert "Wrote 2 lorebook entries" in out.getvalue()
    book = json.loads(path.read_text())
    entries = sorted(book["entries"].values(), key=lambda e: e["uid"])
    assert [(e["comment"], e["constant"], e["key"]) for e in entries] == [
        ("fairy (ambient)", True, ["fairy", "sprite", "wisp"]),
        ("well", False, ["well"]),
    ]
    assert entries[1]["content"] == "Deep.\n\nAnd old."
    bundle = sillytavern_read(path.read_bytes(), zone="UTC")
    plan = bridge_plan(bundle, file_name=path.name, format="sillytavern")
    assert plan.draft_diff.is_empty


def test_an_entrys_keys_are_the_fragments_key_and_triggers_then_an_older_keys_line(gem, tmp_path):
    Fragment.objects.filter(key="fairy").update(triggers=["wisp", "the little light", "Fairy"])
    Fragment.objects.filter(key="well").update(triggers=["Old well"])
    path = tmp_path / "world.json"
    call_command("export_to", "sillytavern", str(path), stdout=io.StringIO())

    entries = sorted(json.loads(path.read_text())["entries"].values(), key=lambda e: e["uid"])
    assert [(e["comment"], e["key"]) for e in entries] == [
        ("fairy (ambient)", ["fairy", "wisp", "the little light", "sprite"]),
        ("well", ["well", "Old well"]),
    ]


def test_a_card_carries_the_book_and_the_ambient_prose_in_json_and_png(gem, tmp_path):
    for name in ("card.json", "card.png"):
        path = tmp_path / name
        call_command("export_to", "card", str(path), stdout=io.StringIO())

        bundle = card_read(path.read_bytes(), zone="UTC")
        assert bundle.name == "claude"
        assert [part.text for part in bundle.wake] == ["She knows the [fairy]."]
        plan = bridge_plan(bundle, file_name=name, format="card")
        assert plan.draft_diff.is_empty
    assert path.read_bytes().startswith(b"\x89PNG")


def test_a_path_that_cannot_be_written_is_named(gem, tmp_path):
    with pytest.raises(CommandError, match="No such file"):
        call_command("export_to", "sillytavern", str(tmp_path / "absent" / "world.json"))
