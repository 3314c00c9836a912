"""The Anvil's pages register with the URLs, not when Django starts (``anvil/apps.py``)."""

import pytest

pytestmark = pytest.mark.store_free

SEEN = """
import sys
from django.contrib import admin
from django.core.checks import Tags, run_checks

print(len(admin.site._registry), "anvil.bridges" in sys.modules)
problems = run_checks(tags=[Tags.admin])
print(len(admin.site._registry), "anvil.bridges" in sys.modules, len(problems))
"""


def test_a_process_starts_without_the_anvils_pages_and_the_admin_checks_see_every_page(manage):
    done = manage("shell", "--no-imports", "-c", SEEN)

    assert done.returncode == 0, done.stderr
    started, checked = done.stdout.splitlines()
    assert started == "0 False"
    registered, imported, problems = checked.split()
    assert int(registered) > 30 and imported == "True" and problems == "0"


def test_reading_the_urls_registers_the_anvils_pages(manage):
    done = manage(
        "shell",
        "--no-imports",
        "-c",
        "from django.contrib import admin; from django.urls import reverse; "
        "print(reverse('admin:gem_fragment_changelist'), len(admin.site._registry) > 30)",
    )

    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["/admin/gem/fragment/", "True"]
