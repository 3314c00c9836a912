import pytest
from django.contrib.auth import authenticate, get_user_model

from heart.services import owner_ensure

pytestmark = pytest.mark.django_db


def test_it_creates_the_owner_with_the_given_password():
    assert owner_ensure(username="mono", password="a long given password") is None
    owner = get_user_model().objects.get(username="mono")
    assert owner.is_superuser and owner.is_staff
    assert authenticate(username="mono", password="a long given password") == owner


def test_it_generates_a_password_once_when_none_is_given():
    generated = owner_ensure(username="mono", password=None)
    assert generated and len(generated) >= 16
    assert authenticate(username="mono", password=generated) is not None
    assert owner_ensure(username="mono", password=None) is None
    assert authenticate(username="mono", password=generated) is not None
    assert get_user_model().objects.count() == 1


def test_it_applies_a_password_given_later():
    owner_ensure(username="mono", password=None)
    owner_ensure(username="mono", password="the new password")
    assert authenticate(username="mono", password="the new password") is not None
