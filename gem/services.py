"""Writes to the Gem that are not a person's edit in the Anvil: the decay sweep."""

from datetime import datetime

from django.conf import settings
from django.db import transaction

from gem import decay
from gem.models import WorkingMemory
from gem.selectors import decay_inputs


def working_memory_sweep(*, now: datetime, current_turn: int) -> list[int]:
    """Mark ``decayed`` the active items that are under the threshold for good."""
    gone = [
        item.pk
        for item in WorkingMemory.objects.filter(status="active")
        if decay.is_gone_for_good(
            **decay_inputs(item, now=now, current_turn=current_turn),
            pressure=settings.DECAY_PRESSURE,
        )
    ]
    with transaction.atomic():
        WorkingMemory.objects.filter(pk__in=gone, status="active").update(
            status="decayed", resolved_at=now
        )
    return gone
