"""django-q2 entry points of the Compass: they take ids and call one service each."""

from datetime import timedelta

from django.conf import settings

from compass.services import consultation_run, consultations_recover, review_start


def run_consultation_task(consultation_id: int) -> int | None:
    """Answer a queued consultation (safe to run twice: only a queued one is claimed)."""
    consultation = consultation_run(consultation_id=consultation_id)
    return consultation.pk if consultation is not None else None


def review_task() -> int | None:
    """Give up on consultations whose worker stopped, then run the weekly review if it is due
    (a schedule runs this every hour); return the review's id when one ran.

    A running consultation is given up on once the cluster's ``retry`` has passed: a worker
    still alive would have been stopped at the ``timeout``, before it."""
    consultations_recover(stale_after=timedelta(seconds=settings.Q_CLUSTER["retry"]))
    review = review_start()
    return review.pk if review is not None else None
