from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from transfer.formats.dates import moment_read, zone_of

pytestmark = pytest.mark.store_free

PARIS = zone_of("Europe/Paris")


@pytest.mark.parametrize(
    ("written", "meant"),
    [
        (1715867160000, datetime(2024, 5, 16, 13, 46, tzinfo=UTC)),
        (1715867160000.5, datetime(2024, 5, 16, 13, 46, 0, 500, tzinfo=UTC)),
        ("1715867160000", datetime(2024, 5, 16, 13, 46, tzinfo=UTC)),
        ("2024-05-16T13:45:07.123Z", datetime(2024, 5, 16, 13, 45, 7, 123000, tzinfo=UTC)),
        ("2024-05-16T15:45:07+02:00", datetime(2024, 5, 16, 13, 45, 7, tzinfo=UTC)),
        ("2024-05-16T15:45:07", datetime(2024, 5, 16, 13, 45, 7, tzinfo=UTC)),
        ("2024-5-16@15h45m07s", datetime(2024, 5, 16, 13, 45, 7, tzinfo=UTC)),
        ("2024-05-06@05h04m03s", datetime(2024, 5, 6, 3, 4, 3, tzinfo=UTC)),
        ("2024-07-12@01h31m37s123ms", datetime(2024, 7, 11, 23, 31, 37, 123000, tzinfo=UTC)),
        ("2024-6-5 @14h 56m 50s 682ms", datetime(2024, 6, 5, 12, 56, 50, 682000, tzinfo=UTC)),
        ("2024-6-5 @14h 56m 50s 7ms", datetime(2024, 6, 5, 12, 56, 50, 7000, tzinfo=UTC)),
        ("May 16, 2024 3:45pm", datetime(2024, 5, 16, 13, 45, tzinfo=UTC)),
        ("June 9, 2023 12:05am", datetime(2023, 6, 8, 22, 5, tzinfo=UTC)),
        ("Dec 1, 2023 12:30PM", datetime(2023, 12, 1, 11, 30, tzinfo=UTC)),
    ],
)
def test_it_reads_every_shape_sillytavern_wrote(written, meant):
    assert moment_read(written, zone=PARIS) == meant


def test_it_reads_a_time_without_offset_in_the_zone_given():
    read = moment_read("2024-01-16T10:00:00", zone=zone_of("America/New_York"))

    assert read == datetime(2024, 1, 16, 15, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("written", "said"),
    [
        ("yesterday", "not a time ('yesterday')"),
        ("Smarch 16, 2024 1:45pm", "not a time ('Smarch 16, 2024 1:45pm')"),
        ("2024-13-16@13h45m07s", "not a time ('2024-13-16@13h45m07s')"),
        (-5, "not a time (-5 milliseconds since 1970)"),
        (True, "not a time (True)"),
        (None, "not a time (None)"),
        ([2024], "not a time ([2024])"),
    ],
)
def test_it_says_what_is_not_a_time(written, said):
    with pytest.raises(ValueError) as refused:
        moment_read(written, zone=PARIS)

    assert str(refused.value) == said


@given(st.datetimes(min_value=datetime(1971, 1, 1), max_value=datetime(2200, 1, 1)))
def test_it_reads_back_epoch_milliseconds_and_iso_alike(moment):
    aware = moment.replace(tzinfo=UTC, microsecond=moment.microsecond // 1000 * 1000)
    millis = (aware - datetime(1970, 1, 1, tzinfo=UTC)) // timedelta(milliseconds=1)

    assert moment_read(millis, zone=PARIS) == aware
    assert moment_read(aware.isoformat(), zone=PARIS) == aware
