"""The Compass's writes: a person asks, a worker answers, the weekly review starts itself.

A consultation is written queued and handed to django-q2 (``consultation_ask``); the worker
claims it (queued → running) and calls Claude (``consultation_run``). The answer is parsed
whole (``compass.answer``): its proposals are staged as plan suggestions of the queue
(``mirror.services.suggestions_stage``, ``proposer=compass``), each linked to the consultation
by a ``Proposal``, in the same transaction that marks it done. A failed call or a refused
answer marks it failed with a message and stages nothing; ``consultation_retry`` queues it
again. Nothing reaches working memory here: a person promotes a proposal
(``mirror.services.suggestion_promote``).
"""

from datetime import datetime, timedelta

from django.conf import settings
from django.contrib.admin.models import ADDITION, CHANGE, LogEntry
from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone
from django_q.tasks import async_task

from compass import offline
from compass.answer import AnswerError, answer_parse
from compass.findings import findings_of, findings_text
from compass.models import Consultation, ConsultationKind, ConsultationStatus, Proposal
from compass.prompts import prompt_current
from compass.read import FINDINGS, QUESTION, compass_read
from gem.models import WorkingMemoryType
from gem.zone import owner_time_zone
from mirror.models import Proposer
from mirror.services import Staged, suggestions_stage
from silentstar import claude
from silentstar.claude import ClaudeError
from silentstar.words import counted

QUESTION_CHARS_MAX = 4000
# A failed review waits this long before the schedule starts another (a person can retry it
# at once): an outage is not called every hour.
REVIEW_FAILED_WAIT = timedelta(days=1)
UNDER_WAY = (ConsultationStatus.QUEUED, ConsultationStatus.RUNNING)


class ConsultationError(ValueError):
    """A request the Compass cannot act on, and why."""


def consultation_ask(*, question: str, user) -> Consultation:
    """Write ``user``'s question as a queued consultation and queue its answer."""
    words = question.strip()
    if not words:
        raise ConsultationError("Ask the Compass something: the question is empty.")
    if len(words) > QUESTION_CHARS_MAX:
        raise ConsultationError(
            f"The question is {len(words):,} characters long; the Compass takes at most "
            f"{QUESTION_CHARS_MAX:,}."
        )
    consultation = Consultation.objects.create(question=words, asked_by=user.get_username())
    LogEntry.objects.log_actions(user.pk, [consultation], ADDITION, "Asked the Compass")
    _enqueue(consultation.pk)
    consultation.refresh_from_db()
    return consultation


def review_ask(*, user) -> Consultation:
    """Queue a review now, at ``user``'s request, whenever the last one was (the schedule's
    wait is for reviews nobody asked for)."""
    try:
        with transaction.atomic(using="summaries"):
            review = Consultation.objects.create(
                kind=ConsultationKind.REVIEW, asked_by=user.get_username()
            )
    except IntegrityError as error:
        raise ConsultationError("A review is already under way: one runs at a time.") from error
    LogEntry.objects.log_actions(user.pk, [review], ADDITION, "Asked for a review")
    _enqueue(review.pk)
    review.refresh_from_db()
    return review


def _enqueue(consultation_id: int) -> None:
    async_task("compass.tasks.run_consultation_task", consultation_id, group="compass")


def consultation_run(*, consultation_id: int, now: datetime | None = None) -> Consultation | None:
    """Claim a queued consultation and answer it; None when it was not queued (another worker
    took it, or it was decided otherwise). ``now`` is the consultation's moment: what it reads
    and the dues of its answer are read at it."""
    now = now or timezone.now()
    tools = claude.web_search_tools()
    claimed = Consultation.objects.filter(
        pk=consultation_id, status=ConsultationStatus.QUEUED
    ).update(
        status=ConsultationStatus.RUNNING,
        started_at=now,
        attempts=F("attempts") + 1,
        web_search=bool(tools),
        error="",
    )
    if not claimed:
        return None
    consultation = Consultation.objects.get(pk=consultation_id)
    try:
        return _answer(consultation, now=now, tools=tools)
    except Exception as error:
        _failed(consultation, f"The Compass stopped on an unexpected error: {error!r}.")
        raise


def _answer(consultation: Consultation, *, now: datetime, tools: list[dict]) -> Consultation:
    zone = owner_time_zone()
    kind = consultation.kind
    reading = compass_read(question=consultation.question, now=now, time_zone=zone)
    sections = list(reading.sections)
    findings = ""
    if kind == ConsultationKind.REVIEW:
        found = findings_of(reading.items, now=now, time_zone=zone)
        findings = findings_text(found)
        sections.insert(1, (FINDINGS, findings))

        def offline_answer() -> str:
            return offline.review_answer(found, now=now, time_zone=zone)
    else:
        sections.append((QUESTION, consultation.question))

        def offline_answer() -> str:
            return offline.consult_answer(consultation.question, now=now, time_zone=zone)

    try:
        reply = claude.complete(
            component=f"compass-{kind}",
            system=[{"type": "text", "text": prompt_current(kind)}],
            messages=[
                {
                    "role": "user",
                    "content": "\n\n".join(
                        f"## {title}\n{body}" for title, body in sections if body
                    ),
                }
            ],
            offline_answer=offline_answer,
            model=settings.COMPASS_MODEL,
            max_tokens=settings.AGENT_MAX_TOKENS,
            tools=tools,
        )
    except ClaudeError as error:
        return _failed(consultation, f"The call to Claude failed: {error}.", findings=findings)
    try:
        answer = answer_parse(reply.text, now=now, time_zone=zone)
    except AnswerError as error:
        cut = (
            f" The reply was cut off at {settings.AGENT_MAX_TOKENS:,} tokens "
            "(SILENTSTAR_AGENT_MAX_TOKENS)."
            if reply.stop_reason == "max_tokens"
            else ""
        )
        return _failed(
            consultation,
            f"The Compass's answer was refused, and nothing of it was staged: {error}{cut}",
            findings=findings,
            reply=reply.text,
            model=reply.model,
        )
    with transaction.atomic(using="summaries"):
        marked = Consultation.objects.filter(
            pk=consultation.pk,
            status=ConsultationStatus.RUNNING,
            attempts=consultation.attempts,
        ).update(
            status=ConsultationStatus.DONE,
            findings=findings,
            reasoning=answer.reasoning,
            reply=reply.text,
            model=reply.model,
            finished_at=timezone.now(),
        )
        if marked:  # else it was given up on meanwhile (recovered): nothing is staged
            staged = suggestions_stage(
                proposer=Proposer.COMPASS,
                suggestions=[
                    Staged(
                        type=WorkingMemoryType.PLAN,
                        content=proposed.plan,
                        due=proposed.due,
                        hidden=proposed.hidden,
                        reason=proposed.why,
                    )
                    for proposed in answer.proposals
                ],
            )
            Proposal.objects.bulk_create(
                Proposal(consultation=consultation, suggestion=suggestion, position=position)
                for position, suggestion in enumerate(staged)
            )
    consultation.refresh_from_db()
    return consultation


def _failed(consultation: Consultation, error: str, **fields: str) -> Consultation:
    Consultation.objects.filter(pk=consultation.pk, status=ConsultationStatus.RUNNING).update(
        status=ConsultationStatus.FAILED, error=error, finished_at=timezone.now(), **fields
    )
    consultation.refresh_from_db()
    return consultation


def consultation_retry(*, consultation_id: int, user=None) -> Consultation:
    """Queue a failed consultation again, as it was asked."""
    try:
        with transaction.atomic(using="summaries"):
            retried = Consultation.objects.filter(
                pk=consultation_id, status=ConsultationStatus.FAILED
            ).update(
                status=ConsultationStatus.QUEUED,
                error="",
                reasoning="",
                reply="",
                findings="",
                model="",
                started_at=None,
                finished_at=None,
            )
    except IntegrityError as error:
        raise ConsultationError("Another review is under way: retry this one after it.") from error
    consultation = Consultation.objects.filter(pk=consultation_id).first()
    if consultation is None:
        raise ConsultationError(f"There is no consultation {consultation_id}.")
    if not retried:
        raise ConsultationError(
            f"Consultation {consultation_id} is {consultation.status}: only a failed one is "
            "retried."
        )
    if user is not None:
        LogEntry.objects.log_actions(user.pk, [consultation], CHANGE, "Retried")
    _enqueue(consultation_id)
    consultation.refresh_from_db()
    return consultation


def consultations_recover(*, stale_after: timedelta, now: datetime | None = None) -> list[int]:
    """Mark failed the consultations left running longer than ``stale_after`` (their worker
    stopped: a task runs at most the cluster's timeout); return their ids. A person retries
    them."""
    now = now or timezone.now()
    stale = Consultation.objects.filter(
        status=ConsultationStatus.RUNNING, started_at__lt=now - stale_after
    )
    ids = list(stale.values_list("pk", flat=True))
    minutes = counted(round(stale_after.total_seconds() / 60), "minute")
    stale.filter(pk__in=ids).update(
        status=ConsultationStatus.FAILED,
        error=f"The worker stopped while the Compass was answering (no answer after {minutes}); "
        "nothing was staged. Retry it.",
        finished_at=now,
    )
    return ids


def review_start(*, now: datetime | None = None) -> Consultation | None:
    """Run the weekly review when it is due: reviews are on (``COMPASS_REVIEW_DAYS`` > 0), none
    is under way, none done in the last ``COMPASS_REVIEW_DAYS`` days (counted from its moment,
    when it started), none failed in the last ``REVIEW_FAILED_WAIT``, and working memory holds a
    plan, pin or pattern to review."""
    now = now or timezone.now()
    days = settings.COMPASS_REVIEW_DAYS
    if days <= 0:
        return None
    reviews = Consultation.objects.filter(kind=ConsultationKind.REVIEW)
    if (
        reviews.filter(status__in=UNDER_WAY).exists()
        or reviews.filter(
            status=ConsultationStatus.DONE, started_at__gt=now - timedelta(days=days)
        ).exists()
        or reviews.filter(
            status=ConsultationStatus.FAILED, created_at__gt=now - REVIEW_FAILED_WAIT
        ).exists()
    ):
        return None
    if not compass_read(question="", now=now, time_zone=owner_time_zone()).items:
        return None
    try:
        with transaction.atomic(using="summaries"):
            review = Consultation.objects.create(kind=ConsultationKind.REVIEW, created_at=now)
    except IntegrityError:
        return None  # another worker started one at the same moment
    return consultation_run(consultation_id=review.pk, now=now)
