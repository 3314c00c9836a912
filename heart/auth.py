"""Sign-in with a limit on failed attempts.

Failed sign-ins are counted per client address and user name in Django's cache, over a sliding
window (``LOGIN_FAILURE_WINDOW_MINUTES``). Once ``LOGIN_FAILURE_LIMIT`` failures fall inside it,
further attempts for that pair are refused with 429 before the password is looked at, until
the oldest of those failures leaves the window. A successful sign-in clears the count.

The client address is ``REMOTE_ADDR``; behind a reverse proxy (``SILENTSTAR_BEHIND_PROXY``) it
is the last address in ``X-Forwarded-For``, the one the proxy itself saw.
"""

import hashlib
import logging
import math
import time

from django.conf import settings
from django.contrib.auth.views import LoginView
from django.core.cache import cache

logger = logging.getLogger(__name__)

CACHE_PREFIX = "heart:login-failures:"


def client_address(request) -> str:
    if settings.LOGIN_BEHIND_PROXY:
        forwarded = request.headers.get("X-Forwarded-For", "").split(",")[-1].strip()
        if forwarded:
            return forwarded
    return request.META.get("REMOTE_ADDR", "")


def _key(address: str, username: str) -> str:
    who = f"{address}\n{username.strip().casefold()}".encode()
    return CACHE_PREFIX + hashlib.sha256(who).hexdigest()


def _window() -> float:
    return settings.LOGIN_FAILURE_WINDOW_MINUTES * 60.0


def _recent(key: str, now: float) -> list[float]:
    return [moment for moment in cache.get(key, []) if now - moment < _window()]


def login_wait_seconds(*, address: str, username: str, now: float | None = None) -> float:
    """Seconds until this pair may try again; 0 when it may try now."""
    now = time.time() if now is None else now
    failures = _recent(_key(address, username), now)
    limit = settings.LOGIN_FAILURE_LIMIT
    if len(failures) < limit:
        return 0.0
    # The pair may try again once all but limit - 1 of its failures have left the window.
    return max(0.0, sorted(failures)[-limit] + _window() - now)


def login_failure_record(*, address: str, username: str, now: float | None = None) -> int:
    """Count one failed attempt; return how many fall in the window now."""
    now = time.time() if now is None else now
    key = _key(address, username)
    failures = [*_recent(key, now), now][-settings.LOGIN_FAILURE_LIMIT :]
    cache.set(key, failures, timeout=math.ceil(_window()))
    return len(failures)


def login_failures_clear(*, address: str, username: str) -> None:
    cache.delete(_key(address, username))


def wait_message(seconds: float) -> str:
    minutes = max(1, math.ceil(seconds / 60))
    unit = "minute" if minutes == 1 else "minutes"
    return f"Too many attempts, try again in {minutes} {unit}."


class ThrottledLoginView(LoginView):
    """Django's sign-in, refusing a client and user name after too many failures."""

    def post(self, request, *args, **kwargs):
        address = client_address(request)
        username = request.POST.get("username", "")
        wait = login_wait_seconds(address=address, username=username)
        if wait:
            logger.warning("Sign-in refused for %r from %s: too many failures", username, address)
            form = self.get_form_class()(request, initial={"username": username})
            context = self.get_context_data(form=form, throttle_message=wait_message(wait))
            return self.render_to_response(context, status=429)
        return super().post(request, *args, **kwargs)

    def form_invalid(self, form):
        login_failure_record(
            address=client_address(self.request), username=self.request.POST.get("username", "")
        )
        return super().form_invalid(form)

    def form_valid(self, form):
        login_failures_clear(
            address=client_address(self.request), username=self.request.POST.get("username", "")
        )
        return super().form_valid(form)
