"""What every Anvil test of the admin's pages shares: a few fragments linked by edges, and the
admin log's messages in order."""

import pytest
from django.contrib.admin.models import LogEntry

from gem.models import Fragment, FragmentEdge


@pytest.fixture
def fragments():
    made = {
        key: Fragment.objects.create(key=key, ambient=ambient, inventory=inventory)
        for key, ambient, inventory in [
            ("cottagecore", "Soft rural.", "Cream apron dress."),
            ("fairy", "White softness.", ""),
            ("ouji", "Prince style.", ""),
            ("lonely", "Nobody links here.", ""),
        ]
    }
    FragmentEdge.objects.create(source=made["cottagecore"], target=made["fairy"], relation="near")
    FragmentEdge.objects.create(source=made["ouji"], target=made["cottagecore"], relation="was")
    return made


def log_messages() -> list[str]:
    return list(LogEntry.objects.order_by("pk").values_list("change_message", flat=True))
