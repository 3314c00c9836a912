"""The ledger's one write: a row for a finished call to Claude."""

import logging
from datetime import datetime

from django.db import OperationalError

from ledger.models import ModelCall
from silentstar.claude import Reply
from silentstar.locks import PATIENCE, when_unlocked

logger = logging.getLogger(__name__)

# Seconds a row waits out a locked events store, as long as the Heart's own writes after a reply
# wait (silentstar.locks.PATIENCE): the turn would meet the same lock next.
LOCK_PATIENCE = PATIENCE


def model_call_record(*, component: str, reply: Reply, at: datetime) -> ModelCall | None:
    """Write one row for a call that finished at ``at``. A store still locked after
    ``LOCK_PATIENCE`` seconds leaves the row in the log instead (None is returned): the caller's
    reply must not be lost for the ledger's sake."""
    usage = reply.usage
    row = {
        "ts": at,
        "component": component,
        "model": reply.model,
        "offline": reply.offline,
        "local": reply.local,
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "cache_read_tokens": usage.cache_read_tokens,
        "cache_write_5m_tokens": usage.cache_write_5m_tokens,
        "cache_write_1h_tokens": usage.cache_write_1h_tokens,
        "web_searches": usage.web_searches,
    }
    try:
        return when_unlocked(lambda: ModelCall.objects.create(**row), patience=LOCK_PATIENCE)
    except OperationalError as error:
        logger.error("A model call was not written to the ledger (%s): %r", error, row)
        return None


def model_called_record(sender, *, component: str, reply: Reply, at: datetime, **kwargs) -> None:
    """The receiver of ``silentstar.claude.model_called``."""
    model_call_record(component=component, reply=reply, at=at)
