"""The browser tests' fixtures (``tests/browser/conftest.py``): a live server, Debian's Chromium,
the owner signed in and a worker thread, for the browser benchmark here."""

from tests.browser.conftest import *  # noqa: F403
