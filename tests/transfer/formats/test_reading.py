import pytest

from transfer.bundle import BridgeError
from transfer.formats.reading import Checks, fragment_of, json_parsed, text_decoded

pytestmark = pytest.mark.store_free


def test_it_decodes_utf8_with_or_without_a_byte_order_mark():
    assert text_decoded("café".encode()) == "café"
    assert text_decoded(b"\xef\xbb\xbf" + "café".encode()) == "café"


def test_it_names_the_line_and_byte_that_are_not_utf8():
    with pytest.raises(BridgeError, match=r"^line 3: not UTF-8 text \(byte 6 cannot"):
        text_decoded(b"a\nb\nc\xff")


def test_it_names_line_and_column_of_a_json_syntax_error():
    with pytest.raises(
        BridgeError, match=r"^inner: line 2, column 5: not JSON \(Expecting .:. delimiter\)"
    ):
        json_parsed('{"a": 1,\n "b"}', what="inner: ")


def test_it_refuses_json_nested_past_reading():
    with pytest.raises(BridgeError, match="nested too deeply"):
        json_parsed("[" * 100_000 + "]" * 100_000)


def test_its_checks_refuse_once_with_every_problem_and_go_on_with_defaults():
    checks = Checks()
    holder = {"title": 3, "on": "yes", "tags": ["a", None], "extra": {"k": "\u0000"}}

    assert checks.text(holder, "title", "entries.1") == ""
    assert checks.text(holder, "missing", "entries.1", default="none") == "none"
    assert checks.flag(holder, "on", "entries.1", default=True) is True
    assert checks.texts(holder, "tags", "entries.1") == ("a",)
    assert checks.kept(holder, "entries.1", mapped={"title", "on", "tags"}) == {
        "extra": {"k": "\u0000"}
    }
    with pytest.raises(BridgeError) as refused:
        checks.refuse()

    assert str(refused.value).splitlines() == [
        "entries.1.title: must be a text, not a number",
        "entries.1.on: must be true or false, not a text",
        "entries.1.tags[1]: must be a text, not null",
        "entries.1.extra: holds a NUL character (\\x00), which PostgreSQL cannot store",
    ]


def test_its_checks_refuse_nothing_when_all_is_well():
    checks = Checks()
    checks.text({"a": "b"}, "a", "")

    checks.refuse()


@pytest.mark.parametrize(
    ("entry", "fragment"),
    [
        ({"extensions": {"silentstar": {"key": "maren"}}}, {"key": "maren"}),
        ({"extensions": {"silentstar": "maren"}}, None),
        ({"extensions": ["silentstar"]}, None),
        ({}, None),
    ],
)
def test_it_takes_a_fragment_only_when_it_is_an_object(entry, fragment):
    assert fragment_of(entry) == fragment
