"""Writes of the Heart that touch several models or the outside world."""

import secrets

from django.contrib.auth import get_user_model


def owner_ensure(*, username: str, password: str | None) -> str | None:
    """Create the owner account unless it exists; return a generated password, if one was made.

    An existing owner is left as it is (its password is never reset by start-up), except that a
    password given explicitly is applied, so changing the environment variable changes it.
    """
    user_model = get_user_model()
    owner = user_model.objects.filter(username=username).first()
    if owner is not None:
        if password:
            owner.set_password(password)
            owner.save(update_fields=["password"])
        return None
    generated = None if password else secrets.token_urlsafe(12)
    user_model.objects.create_superuser(username=username, email="", password=password or generated)
    return generated
