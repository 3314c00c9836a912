"""Sign-in with a limit on failed attempts, kept by django-axes.

axes counts failed sign-ins in its ``AccessAttempt`` rows (the ``default`` store) per client
address and, separately, per user name: once either reaches ``AXES_FAILURE_LIMIT`` within
``AXES_COOLOFF_TIME``, further attempts are refused with 429 before any password is checked.
A successful sign-in clears that name's and that address's failures.

axes checks the count before the password and records a failure after it, so attempts that
arrive together would all pass the check (a limitation its maintainers accept,
jazzband/django-axes#592). Sign-ins that one count covers therefore take turns: an attempt
holds a lock for its user name and one for its address while the check, the password and the
record happen, so it sees every failure counted against either before it. Attempts for other
names from other addresses go on at the same time, so a flood against one account does not
keep the owner waiting at another, nor one address's guesses everyone else. The locks are
advisory locks on PostgreSQL and, on SQLite, lock files beside the database rather than the
database's own write lock, which would stall every other write while a password is hashed.

The client address is ``REMOTE_ADDR``; behind a reverse proxy (``SILENTSTAR_BEHIND_PROXY``) it
is the last address in ``X-Forwarded-For``, the one the proxy itself saw.
"""

import fcntl
import hashlib
import math
from contextlib import ExitStack, contextmanager
from pathlib import Path

from axes.backends import AxesStandaloneBackend
from axes.helpers import get_cool_off
from axes.models import AccessAttempt
from django.conf import settings
from django.contrib.auth.forms import AuthenticationForm
from django.contrib.auth.views import LoginView
from django.db import connections, router, transaction
from django.shortcuts import render


def client_address(request) -> str:
    """The client's address, as axes counts it (``AXES_CLIENT_IP_CALLABLE``)."""
    if settings.LOGIN_BEHIND_PROXY:
        forwarded = request.headers.get("X-Forwarded-For", "").split(",")[-1].strip()
        if forwarded:
            return forwarded
    return request.META.get("REMOTE_ADDR", "")


class SignInLimitBackend(AxesStandaloneBackend):
    """axes' check, for sign-ins that come with a request.

    ``authenticate()`` called without one comes from code on the server (a management
    command), not from a client, and goes straight on to the next backend.
    """

    def authenticate(self, request, username=None, password=None, **kwargs):
        if request is None:
            return None
        return super().authenticate(request, username=username, password=password, **kwargs)


SIGN_IN_LOCKS = 0x5157  # the class of PostgreSQL's two-number advisory locks kept for sign-ins
SIGN_IN_LOCK_FILES = 64  # names and addresses share these; two that share one merely wait


def _lock_numbers(keys: list[str]) -> list[int]:
    """Each key's lock, in one order for every attempt (two attempts never wait on each other
    crosswise), taken once when keys share one."""
    numbers = {
        int.from_bytes(hashlib.blake2b(key.encode(), digest_size=4).digest()) for key in keys
    }
    return sorted(numbers)


@contextmanager
def sign_in_turn(*, username: str, address: str):
    """Hold the sign-in locks of ``username`` and ``address`` until the block ends."""
    numbers = _lock_numbers([f"user:{username.casefold()}", f"address:{address}"])
    alias = router.db_for_write(AccessAttempt)
    connection = connections[alias]
    if connection.vendor == "postgresql":
        # Released when the transaction ends, after axes' record of this attempt is committed.
        with transaction.atomic(using=alias):
            with connection.cursor() as cursor:
                for number in numbers:
                    cursor.execute(
                        "SELECT pg_advisory_xact_lock(%s, %s)", [SIGN_IN_LOCKS, number - 2**31]
                    )
            yield
        return
    folder = Path(f"{connection.settings_dict['NAME']}.sign-in-locks")
    folder.mkdir(exist_ok=True)
    with ExitStack() as held:
        for file_number in sorted({number % SIGN_IN_LOCK_FILES for number in numbers}):
            lock_file = held.enter_context(open(folder / f"{file_number:02}.lock", "ab"))
            fcntl.flock(lock_file, fcntl.LOCK_EX)  # released when the file is closed
        yield


def wait_message() -> str:
    minutes = max(1, math.ceil(get_cool_off().total_seconds() / 60))
    unit = "minute" if minutes == 1 else "minutes"
    return f"Too many failed sign-ins: try again in {minutes} {unit}."


def lockout_response(request, original_response=None, credentials=None):
    """The sign-in page, saying why it refused (``AXES_LOCKOUT_CALLABLE``), with status 429."""
    username = (credentials or {}).get("username") or request.POST.get("username", "")
    context = {
        "form": AuthenticationForm(request, initial={"username": username}),
        "next": request.POST.get("next", ""),
        "lockout_message": wait_message(),
    }
    return render(request, "registration/login.html", context, status=429)


class ThrottledLoginView(LoginView):
    """Django's sign-in, one attempt at a time, so axes' limit holds under concurrency."""

    def post(self, request, *args, **kwargs):
        username = request.POST.get("username", "")
        with sign_in_turn(username=username, address=client_address(request)):
            return super().post(request, *args, **kwargs)
