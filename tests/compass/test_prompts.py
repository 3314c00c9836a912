"""The Compass's instructions (``compass/prompts.py``)."""

import pytest

from compass.models import CompassPrompt
from compass.prompts import prompt_current

pytestmark = pytest.mark.django_db(databases="__all__")


def test_it_uses_the_newest_saved_version_of_a_kind_else_the_shipped_default():
    assert prompt_current("review").startswith("You are the Compass")  # migrated from the file
    CompassPrompt.objects.create(kind="consult", content="Plan gently.")
    assert prompt_current("consult") == "Plan gently."
    assert prompt_current("review").startswith("You are the Compass")

    CompassPrompt.objects.filter(kind="review").delete()
    assert prompt_current("review").startswith("You are the Compass")  # from the file
