import pytest

from gem.models import AmbientProse, Fragment, Identity
from gem.selectors import ambient_prose_check, identities_current

pytestmark = pytest.mark.django_db


def test_it_finds_keys_without_fragments_and_fragments_never_mentioned():
    for key in ("fairy", "jirai", "y'lhara", "body-training"):
        Fragment.objects.create(key=key)
    AmbientProse.objects.create(content="Old draft naming [nothing].")
    AmbientProse.objects.create(
        content="Luna's [fairy] days, [y'lhara]'s journal, [piano] and [fairy] again."
    )
    check = ambient_prose_check()
    assert check.missing == ["piano"]
    assert check.unmentioned == ["body-training", "jirai"]


def test_it_checks_a_draft_before_it_is_saved():
    Fragment.objects.create(key="fairy")
    assert ambient_prose_check("[fairy] and [wardrobe]").missing == ["wardrobe"]
    assert ambient_prose_check("").unmentioned == ["fairy"]


def test_it_reads_identities_once_with_their_sides():
    Identity.objects.create(name="mira", side="companion", color="#aabbcc")
    who = identities_current()
    assert {"luna", "claude", "mira"} <= set(who.names)
    assert who.companions == {"claude", "y'lhara", "mira"}
    assert who.default_companion == "claude"
    assert who.users == ["hasuki", "renki", "luna", "chloe", "strah"]
    assert who.sides["luna"] == "user" and who.sides["mira"] == "companion"
