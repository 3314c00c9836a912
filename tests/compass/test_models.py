"""The Compass's consultations as the Anvil names them (``compass/models.py``)."""

from compass.models import Consultation


def test_it_names_a_consultation_by_its_question_on_one_line_cut_to_sixty_characters():
    short = Consultation(question="What should\n this week   hold?")
    long = Consultation(question="plan " * 20)

    assert str(short) == "What should this week hold?"
    assert len(str(long)) == 60
    assert str(long) == ("plan " * 20)[:59] + "…"
