"""Sign-in with a limit on failed attempts, kept by django-axes.

axes counts failed sign-ins in its ``AccessAttempt`` rows (the ``default`` store) per client
address and, separately, per user name: once either reaches ``AXES_FAILURE_LIMIT`` within
``AXES_COOLOFF_TIME``, further attempts are refused with 429 before any password is checked.
A successful sign-in clears that name's and that address's failures.

axes checks the count before the password and records a failure after it, so attempts that
arrive together would all pass the check (a limitation its maintainers accept,
jazzband/django-axes#592). Sign-ins therefore take turns: the check, the password and the
record happen under one lock, so each attempt sees every failure before it. The lock is an
advisory lock on PostgreSQL and, on SQLite, a lock file beside the database rather than the
database's own write lock, which would stall every other write while a password is hashed.

The client address is ``REMOTE_ADDR``; behind a reverse proxy (``SILENTSTAR_BEHIND_PROXY``) it
is the last address in ``X-Forwarded-For``, the one the proxy itself saw.
"""

import fcntl
import math
from contextlib import contextmanager

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


@contextmanager
def sign_in_turn():
    """Hold the one sign-in lock of the store axes counts in, until the block ends."""
    alias = router.db_for_write(AccessAttempt)
    connection = connections[alias]
    if connection.vendor == "postgresql":
        # Released when the transaction ends, after axes' record of this attempt is committed.
        with transaction.atomic(using=alias):
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_advisory_xact_lock(hashtext('silentstar:sign-in'))")
            yield
        return
    with open(f"{connection.settings_dict['NAME']}.sign-in.lock", "ab") as lock_file:
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
        with sign_in_turn():
            return super().post(request, *args, **kwargs)
