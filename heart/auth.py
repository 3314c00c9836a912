"""Sign-in with a limit on failed attempts, kept by django-axes.

axes counts failed sign-ins in its ``AccessAttempt`` rows (the ``default`` store) per user name
and client address together (``AXES_LOCKOUT_PARAMETERS``): once a name has failed
``AXES_FAILURE_LIMIT`` times from one address within ``AXES_COOLOFF_TIME``, further attempts at
that name from that address are refused with 429 before any password is checked. Guesses at the
owner's name from elsewhere therefore never lock the owner out at their own address. An address
has a second, larger limit whatever the names it tries (``LOGIN_ADDRESS_FAILURE_LIMIT``,
``SignInLimitHandler``), so one address cannot go through the names either. A successful
sign-in clears the failures of its own name at its own address only: an account's owner cannot
wipe out the guesses made at other names from the same address.

axes checks the count before the password and records a failure after it, so attempts that
arrive together would all pass the check (a limitation its maintainers accept,
jazzband/django-axes#592). Sign-ins that one count covers therefore take turns: every count an
attempt touches is one of its address, so an attempt holds a lock for its address while the
check, the password and the record happen, and sees every failure counted before it. Attempts
from other addresses go on at the same time, so a flood of guesses from one address does not
keep the owner waiting at another. The locks are advisory locks on PostgreSQL and, on SQLite,
lock files beside the database rather than the database's own write lock, which would stall
every other write while a password is hashed.

The client address is ``REMOTE_ADDR``; behind a reverse proxy (``SILENTSTAR_BEHIND_PROXY``) it
is the last address in ``X-Forwarded-For``, the one the proxy itself saw.
"""

import fcntl
import hashlib
import math
from contextlib import contextmanager
from pathlib import Path

from axes.attempts import get_cool_off_threshold
from axes.backends import AxesStandaloneBackend
from axes.handlers.database import AxesDatabaseHandler
from axes.helpers import get_cool_off, get_failure_limit
from axes.models import AccessAttempt
from django.conf import settings
from django.contrib.auth.forms import AuthenticationForm
from django.contrib.auth.views import LoginView
from django.db import connections, router, transaction
from django.db.models import Sum
from django.shortcuts import render

from silentstar.words import counted


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


class SignInLimitHandler(AxesDatabaseHandler):
    """axes' count per user name and address together, and a limit per address on top.

    axes compares one number with ``AXES_FAILURE_LIMIT``, both before a password is checked and
    after a failure is recorded (the failure that reaches the limit is answered with 429 too).
    Once the address's failures in the window, whatever the names, reach
    ``LOGIN_ADDRESS_FAILURE_LIMIT``, that number is at least the limit.
    """

    def get_failures(self, request, credentials=None) -> int:
        failures = super().get_failures(request, credentials)
        address_failures = AccessAttempt.objects.filter(
            ip_address=request.axes_ip_address,
            attempt_time__gte=get_cool_off_threshold(request),
        ).aggregate(total=Sum("failures_since_start"))["total"]
        if (address_failures or 0) >= settings.LOGIN_ADDRESS_FAILURE_LIMIT:
            return max(failures, get_failure_limit(request, credentials))
        return failures


SIGN_IN_LOCKS = 0x5157  # the class of PostgreSQL's two-number advisory locks kept for sign-ins
SIGN_IN_LOCK_FILES = 64  # addresses share these; two that share one merely wait


@contextmanager
def sign_in_turn(*, address: str):
    """Hold the sign-in lock of ``address`` until the block ends."""
    number = int.from_bytes(hashlib.blake2b(address.encode(), digest_size=4).digest())
    alias = router.db_for_write(AccessAttempt)
    connection = connections[alias]
    if connection.vendor == "postgresql":
        # Released when the transaction ends, after axes' record of this attempt is committed.
        with transaction.atomic(using=alias):
            with connection.cursor() as cursor:
                cursor.execute(
                    "SELECT pg_advisory_xact_lock(%s, %s)", [SIGN_IN_LOCKS, number - 2**31]
                )
            yield
        return
    folder = Path(f"{connection.settings_dict['NAME']}.sign-in-locks")
    folder.mkdir(exist_ok=True)
    with open(folder / f"{number % SIGN_IN_LOCK_FILES:02}.lock", "ab") as lock_file:
        fcntl.flock(lock_file, fcntl.LOCK_EX)  # released when the file is closed
        yield


def wait_message() -> str:
    minutes = max(1, math.ceil(get_cool_off().total_seconds() / 60))
    return f"Too many failed sign-ins: try again in {counted(minutes, 'minute')}."


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
    """Django's sign-in, one attempt at a time per address, so axes' limits hold under
    concurrency."""

    def post(self, request, *args, **kwargs):
        with sign_in_turn(address=client_address(request)):
            return super().post(request, *args, **kwargs)
