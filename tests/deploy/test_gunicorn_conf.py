"""deploy/gunicorn.conf.py and deploy/nginx/silentstar.conf: a page's time limit, one value."""

import re
import runpy

import pytest
from django.conf import settings

from silentstar.env import env_int

DEPLOY = settings.BASE_DIR / "deploy"
VARIABLE = "SILENTSTAR_PAGE_TIMEOUT_SECONDS"


def gunicorn_timeout() -> int:
    return runpy.run_path(str(DEPLOY / "gunicorn.conf.py"))["timeout"]


@pytest.mark.store_free
def test_it_gives_gunicorn_the_page_time_limit_of_the_settings(monkeypatch):
    monkeypatch.delenv(VARIABLE, raising=False)
    assert gunicorn_timeout() == settings.PAGE_TIMEOUT_SECONDS

    monkeypatch.setenv(VARIABLE, " 45 ")
    assert gunicorn_timeout() == env_int(VARIABLE, 0) == 45


@pytest.mark.store_free
def test_it_has_nginx_wait_for_every_page_as_long_as_gunicorn_does(monkeypatch):
    monkeypatch.delenv(VARIABLE, raising=False)
    site = (DEPLOY / "nginx" / "silentstar.conf").read_text()
    passed = [block for block in re.split(r"\n\s*location ", site) if "proxy_pass" in block]

    assert len(passed) == 3  # the import page, the photo inbox, and every other page
    for block in passed:
        for name in ("proxy_read_timeout", "proxy_send_timeout"):
            assert re.findall(rf"^\s*{name} (\d+)s;", block, re.M) == [str(gunicorn_timeout())]


@pytest.mark.store_free
def test_it_lets_the_photo_inbox_take_as_many_photos_as_one_upload_holds():
    site = (DEPLOY / "nginx" / "silentstar.conf").read_text()
    inbox = site.split("location = /admin/loom/inboximage/add/ {")[1].split("}")[0]
    (megabytes,) = re.findall(r"client_max_body_size (\d+)m;", inbox)

    most = settings.DATA_UPLOAD_MAX_NUMBER_FILES * settings.IMAGE_MAX_BYTES
    assert most < int(megabytes) * 2**20 < most * 1.1
