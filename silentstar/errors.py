"""What an error shows: the project's own short pages, and never a connection string.

With debug off, Django answers an error with ``templates/400.html``, ``404.html`` or
``500.html``. Two answers come from here whatever debug says:

- a request naming a host the site does not answer to (``ALLOWED_HOSTS``) gets the short 400
  page from ``ErrorPagesMiddleware``, the first middleware, before anything reads the host:
  Django's debug page for it shows the whole process environment to whoever sent it;
- with debug on, a static file that is not there is the short 404 page, not the list of every
  URL pattern.

And whatever debug says, an error's report (the debug page, a logged report) goes through
``SecretsFilter`` (``DEFAULT_EXCEPTION_REPORTER_FILTER``), which masks connection strings as well
as what Django masks.
"""

import logging
import re

from django.conf import settings
from django.core.exceptions import DisallowedHost
from django.http import HttpResponseBadRequest, HttpResponseNotFound
from django.template import loader
from django.views.debug import SafeExceptionReporterFilter

# scheme://user:password@host, the user possibly empty (redis://:password@host)
URL_WITH_PASSWORD = re.compile(r"[a-z][a-z0-9+.-]*://[^\s/@:]*:[^\s@]*@", re.IGNORECASE)


class ErrorPagesMiddleware:
    """The short 400 page for a foreign Host, and with debug on the short 404 page for a
    static file that is not there (see the module's docstring)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        try:
            request.get_host()
        except DisallowedHost as error:
            # Logged as Django logs it, to the logger a deployment may already silence.
            logging.getLogger("django.security.DisallowedHost").error(
                str(error), extra={"status_code": 400, "request": request}
            )
            return HttpResponseBadRequest(loader.render_to_string("400.html"))
        response = self.get_response(request)
        if (
            settings.DEBUG
            and response.status_code == 404
            and request.path_info.startswith(f"/{settings.STATIC_URL.lstrip('/')}")
        ):
            return HttpResponseNotFound(loader.render_to_string("404.html"))
        return response


class SecretsFilter(SafeExceptionReporterFilter):
    """Django's filter, which masks the settings and request headers whose names hold API, AUTH,
    TOKEN, KEY, SECRET, PASS or SIGNATURE, masking also those whose names hold URL, DSN or
    DATABASE, and any text holding a URL with a password (``DATABASE_URL``, ``REDIS_URL``,
    ``Q_CLUSTER``'s Redis, the cache's location), there and in the traceback's variables."""

    hidden_settings = re.compile(
        "API|AUTH|TOKEN|KEY|SECRET|PASS|SIGNATURE|HTTP_COOKIE|URL|DSN|DATABASE", re.IGNORECASE
    )

    def cleanse_setting(self, key, value):
        # str(): a lazy string (a form's label, a setting not yet read) passes for one.
        if isinstance(value, str) and URL_WITH_PASSWORD.search(str(value)):
            return self.cleansed_substitute
        return super().cleanse_setting(key, value)

    def get_traceback_frame_variables(self, request, tb_frame):
        return [
            (name, self.cleanse_setting("", value))
            if isinstance(value, str | dict | list | tuple)
            else (name, value)
            for name, value in super().get_traceback_frame_variables(request, tb_frame)
        ]
