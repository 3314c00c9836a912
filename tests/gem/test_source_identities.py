"""``manage.py source_identities``: the source documents' seven identities for a person who
brings their conversations, on a new installation (which has none) or beside identities of
its own."""

from io import StringIO

import pytest
from django.core.management import call_command

from gem.models import Identity
from gem.source_identities import SOURCE_IDENTITIES

pytestmark = pytest.mark.django_db


def run() -> str:
    out = StringIO()
    call_command("source_identities", stdout=out)
    return out.getvalue().strip()


@pytest.mark.fresh_install
def test_it_brings_the_seven_to_a_new_installation():
    said = run()
    names = [name for name, _, _ in SOURCE_IDENTITIES]
    assert said == f"Added 7 identities: {', '.join(names)}."
    assert list(Identity.objects.order_by("id").values_list("name", "side", "color")) == [
        tuple(row) for row in SOURCE_IDENTITIES
    ]


@pytest.mark.fresh_install
def test_it_keeps_the_identities_here_and_adds_only_the_names_missing():
    wren = Identity.objects.create(name="wren", side="user", color="#556677")
    moon = Identity.objects.create(name="Luna", side="companion", color="#223344")

    said = run()

    assert said == "Added 6 identities: hasuki, renki, chloe, strah, claude, y'lhara."
    assert Identity.objects.get(pk=wren.pk).name == "wren"
    assert Identity.objects.get(pk=moon.pk).side == "companion"  # a name here, kept as it is
    assert Identity.objects.count() == 8
    assert run() == "The source documents' identities are all here already."
