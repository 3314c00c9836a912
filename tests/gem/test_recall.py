import pytest

from gem.models import Fragment, FragmentEdge
from gem.recall import recall_items
from gem.recalled import Recall

pytestmark = pytest.mark.django_db


@pytest.fixture
def wardrobe():
    fairy = Fragment.objects.create(
        key="fairy",
        ambient="White ethereal softness.",
        recognition="The soft register: layers, lace.",
        inventory="Grey crocheted crewneck. Knitted overcoat.",
    )
    jirai = Fragment.objects.create(key="jirai", ambient="Pink and black.", recognition="Ribbons.")
    wardrobe = Fragment.objects.create(key="wardrobe", ambient="All the clothes, by register.")
    bare = Fragment.objects.create(key="street", ambient="Street clothes.")
    FragmentEdge.objects.create(source=fairy, target=jirai, relation="aesthetic-overlap")
    FragmentEdge.objects.create(source=wardrobe, target=fairy, relation="domain-inventory")
    return {"fairy": fairy, "jirai": jirai, "wardrobe": wardrobe, "street": bare}


def test_it_reads_the_inventory_by_default(wardrobe):
    items = recall_items([Recall("fairy")])
    assert (items[0].key, items[0].tier, items[0].text) == (
        "fairy",
        "inventory",
        "Grey crocheted crewneck. Knitted overcoat.",
    )


def test_it_reads_recognition_when_not_deep(wardrobe):
    assert recall_items([Recall("fairy", deep=False)])[0].tier == "recognition"


def test_it_falls_back_to_a_shallower_tier(wardrobe):
    assert recall_items([Recall("jirai")])[0].tier == "recognition"
    street = recall_items([Recall("street")])[0]
    assert (street.tier, street.text) == ("ambient", "Street clothes.")


def test_it_brings_neighbours_both_ways_at_ambient_depth(wardrobe):
    items = recall_items([Recall("fairy")])
    assert [(i.key, i.tier) for i in items] == [
        ("fairy", "inventory"),
        ("jirai", "ambient"),
        ("wardrobe", "ambient"),
    ]


def test_it_puts_asked_for_fragments_before_neighbours_without_repeats(wardrobe):
    items = recall_items([Recall("fairy"), Recall("jirai", deep=False)])
    assert [i.key for i in items] == ["fairy", "jirai", "wardrobe"]
    assert items[1].tier == "recognition"


def test_it_matches_keys_exactly_and_says_when_nothing_is_there(wardrobe):
    items = recall_items([Recall("Fairy"), Recall("fair")])
    assert [(i.key, i.tier) for i in items] == [("Fairy", "missing"), ("fair", "missing")]
    assert items[0].text == "Nothing is stored under this key."


def test_it_asks_nothing_of_the_database_for_no_requests(django_assert_num_queries):
    with django_assert_num_queries(0):
        assert recall_items([]) == []


def test_it_orders_neighbours_of_several_fragments_as_the_edges_are_ordered(
    wardrobe, django_assert_num_queries
):
    closet = Fragment.objects.create(key="closet", ambient="Where they hang.")
    FragmentEdge.objects.create(source=wardrobe["jirai"], target=closet)
    FragmentEdge.objects.create(source=closet, target=wardrobe["street"])
    FragmentEdge.objects.create(source=wardrobe["street"], target=wardrobe["fairy"])
    with django_assert_num_queries(2):
        items = recall_items([Recall("jirai"), Recall("fairy")])
    # Outgoing edges of the found fragments by (source, target), then incoming ones.
    assert [(i.key, i.tier) for i in items] == [
        ("jirai", "recognition"),
        ("fairy", "inventory"),
        ("closet", "ambient"),
        ("street", "ambient"),
        ("wardrobe", "ambient"),
    ]
