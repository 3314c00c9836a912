import pytest

from anvil import graph
from anvil.graph import graph_around, graph_whole
from gem.models import Fragment, FragmentEdge

pytestmark = pytest.mark.django_db


@pytest.fixture
def chain():
    """a → b → c → d, and e → b; f alone."""
    made = {key: Fragment.objects.create(key=key) for key in "abcdef"}
    for source, target in ["ab", "bc", "cd", "eb"]:
        FragmentEdge.objects.create(
            source=made[source], target=made[target], relation=source + target
        )
    return made


def test_it_gives_the_whole_graph_while_it_is_small(chain):
    whole = graph_whole()
    assert whole.keys == list("abcdef")
    assert sorted(whole.edges) == [
        ("a", "b", "ab"),
        ("b", "c", "bc"),
        ("c", "d", "cd"),
        ("e", "b", "eb"),
    ]


def test_it_refuses_the_whole_graph_when_it_is_large(chain, monkeypatch):
    monkeypatch.setattr(graph, "WHOLE_GRAPH_LIMIT", 5)
    assert graph_whole() is None


@pytest.mark.parametrize(
    ("key", "depth", "keys"),
    [
        ("b", 1, ["a", "b", "c", "e"]),
        ("b", 2, ["a", "b", "c", "d", "e"]),
        ("d", 1, ["c", "d"]),
        ("d", 3, ["a", "b", "c", "d", "e"]),
        ("f", 2, ["f"]),
        ("nope", 2, []),
    ],
)
def test_it_follows_edges_both_ways_to_a_depth(chain, key, depth, keys):
    around = graph_around(key, depth=depth)
    assert around.keys == keys
    assert all(s in keys and t in keys for s, t, _ in around.edges)
    assert not around.truncated


def test_it_keeps_only_edges_among_the_fragments_drawn(chain):
    assert sorted(graph_around("d", depth=1).edges) == [("c", "d", "cd")]


def test_it_cuts_a_neighbourhood_that_grows_too_large(chain, monkeypatch):
    monkeypatch.setattr(graph, "NEIGHBOURHOOD_LIMIT", 3)
    around = graph_around("b", depth=3)
    assert around.truncated
    assert len(around.keys) == 3
    assert "b" in around.keys


def test_it_keeps_the_depth_within_bounds(chain):
    assert graph_around("a", depth=0).keys == ["a", "b"]
    assert graph_around("a", depth=99).keys == graph_around("a", depth=graph.DEPTH_MAX).keys


def test_it_lists_each_fragment_with_its_edges_out_and_in(chain):
    listed = {entry.key: (entry.out, entry.into) for entry in graph_whole().listed}
    assert list(listed) == ["a", "b", "c", "d", "e", "f"]
    assert listed["b"] == ([("bc", "c")], [("ab", "a"), ("eb", "e")])
    assert listed["f"] == ([], [])
