"""The owner's time zone (``gem.zone``): the one chosen in the set-up, else the setting."""

import pytest

from gem.state import state_set
from gem.zone import TIME_ZONE, owner_time_zone, time_zone_known

pytestmark = pytest.mark.django_db


def test_it_reads_the_setting_while_no_zone_is_chosen(settings):
    settings.TIME_ZONE = "Europe/Lisbon"
    assert owner_time_zone() == "Europe/Lisbon"


def test_it_reads_the_zone_chosen(settings):
    settings.TIME_ZONE = "UTC"
    state_set(TIME_ZONE, "Asia/Tokyo")
    assert owner_time_zone() == "Asia/Tokyo"


@pytest.mark.parametrize("stored", ["Europe/Atlantis", "", 3, None, "../etc/passwd"])
def test_it_falls_back_to_the_setting_for_a_zone_this_machine_does_not_know(settings, stored):
    settings.TIME_ZONE = "Europe/Lisbon"
    state_set(TIME_ZONE, stored)
    assert owner_time_zone() == "Europe/Lisbon"


@pytest.mark.parametrize(
    ("name", "known"),
    [("Europe/Amsterdam", True), ("UTC", True), ("Mars/Olympus", False), ("", False)],
)
def test_it_knows_the_iana_zones(name, known):
    assert time_zone_known(name) is known
