import pytest
from django.apps import apps
from django.core.exceptions import ValidationError
from django.db import IntegrityError, connections, router, transaction

from gem.models import (
    Fragment,
    FragmentEdge,
    FragmentSource,
    Identity,
    VersionedText,
    WorkingMemory,
)

pytestmark = pytest.mark.django_db(databases="__all__")


def refused(model_call):
    with pytest.raises(IntegrityError), transaction.atomic():
        model_call()


@pytest.mark.parametrize("field", ["type", "status"])
def test_it_validates_working_memory_choices(field):
    item = WorkingMemory(type="thought", content="she hums when she sews")
    setattr(item, field, "mood")
    with pytest.raises(ValidationError) as error:
        item.full_clean()
    assert field in error.value.message_dict


@pytest.mark.parametrize(("field", "value"), [("type", "mood"), ("status", "forgotten")])
def test_it_refuses_invalid_working_memory_choices_in_the_database(field, value):
    refused(lambda: WorkingMemory.objects.create(content="x", **{"type": "pin", field: value}))
    item = WorkingMemory.objects.create(type="pin", content="sugar in tea")
    refused(lambda: WorkingMemory.objects.filter(pk=item.pk).update(**{field: value}))


def test_it_accepts_every_listed_type_and_status():
    for item_type in WorkingMemory._meta.get_field("type").choices:
        WorkingMemory(type=item_type[0], content="x").full_clean()
    for status in WorkingMemory._meta.get_field("status").choices:
        WorkingMemory(type="plan", content="x", status=status[0]).full_clean()


def test_it_uses_the_key_as_the_fragment_primary_key():
    Fragment.objects.create(key="fairy", ambient="white ethereal softness")
    assert Fragment.objects.get(pk="fairy").ambient == "white ethereal softness"
    refused(lambda: Fragment.objects.create(key="fairy"))


def test_it_keeps_one_fragment_per_key_folded():
    Fragment.objects.create(key="biscuit", key_folded="biscuit")
    Fragment.objects.create(key="Straße", key_folded="strasse")
    refused(lambda: Fragment.objects.create(key="Biscuit", key_folded="biscuit"))
    refused(lambda: Fragment.objects.create(key="STRASSE", key_folded="strasse"))
    assert Fragment.objects.count() == 2


def test_it_refuses_keys_with_spaces():
    with pytest.raises(ValidationError):
        Fragment(key="fairy wardrobe").full_clean()
    Fragment(key="body-training").full_clean()


def test_it_keeps_one_edge_per_source_and_target():
    fairy = Fragment.objects.create(key="fairy")
    jirai = Fragment.objects.create(key="jirai")
    FragmentEdge.objects.create(source=fairy, target=jirai, relation="aesthetic-overlap")
    refused(lambda: FragmentEdge.objects.create(source=fairy, target=jirai, relation="other"))
    FragmentEdge.objects.create(source=jirai, target=fairy, relation="aesthetic-overlap")
    assert FragmentEdge.objects.count() == 2


def test_it_refuses_an_edge_from_a_fragment_to_itself():
    fairy = Fragment.objects.create(key="fairy")
    refused(lambda: FragmentEdge.objects.create(source=fairy, target=fairy))


def test_it_traces_a_fragment_to_each_event_once():
    fairy = Fragment.objects.create(key="fairy")
    FragmentSource.objects.create(fragment=fairy, event_id=12)
    refused(lambda: FragmentSource.objects.create(fragment=fairy, event_id=12))


def test_it_ships_the_identities_of_the_source_documents():
    identities = {i.name: (i.side, i.color) for i in Identity.objects.all()}
    assert identities["hasuki"] == ("user", "#c4a0d4")
    assert identities["renki"] == ("user", "#7ab0d4")
    assert identities["luna"] == ("user", "#b0b0bc")
    assert identities["chloe"] == ("user", "#d4c478")
    assert identities["strah"] == ("user", "#9a6b72")
    assert identities["claude"] == ("companion", "#8b8ec8")
    assert identities["y'lhara"][0] == "companion"


def test_it_lets_people_add_identities_with_valid_colours():
    Identity(name="mira", side="companion", color="#aabbcc").full_clean()
    with pytest.raises(ValidationError):
        Identity(name="mira", side="companion", color="blue").full_clean()
    refused(lambda: Identity.objects.create(name="mira", side="narrator", color="#aabbcc"))


# Each versioned text's table and columns, as they were before they shared one abstract model.
VERSIONED_TABLES = {
    "gem.AmbientProse": ("gem_ambientprose", {"id", "content", "created_at", "author_id"}),
    "gem.WakeText": ("gem_waketext", {"id", "kind", "content", "created_at", "author_id"}),
    "mirror.MirrorPrompt": (
        "mirror_mirrorprompt",
        {"id", "kind", "content", "created_at", "author"},
    ),
    "compass.CompassPrompt": (
        "compass_compassprompt",
        {"id", "kind", "content", "created_at", "author"},
    ),
    "loom.LoomPrompt": ("loom_loomprompt", {"id", "kind", "content", "created_at", "author_id"}),
}


@pytest.mark.parametrize("label", VERSIONED_TABLES)
def test_the_five_versioned_texts_share_one_abstract_model_and_keep_their_tables(label):
    model = apps.get_model(label)
    table, columns = VERSIONED_TABLES[label]
    alias = router.db_for_write(model)
    with connections[alias].cursor() as cursor:
        described = connections[alias].introspection.get_table_description(cursor, table)

    assert issubclass(model, VersionedText) and model._meta.db_table == table
    assert {column.name for column in described} == columns
    assert model.text_fields == (() if label == "gem.AmbientProse" else ("kind",))
