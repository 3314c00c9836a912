"""The Loom's actions: sessions, the photo inbox, and the facet agents' calls with their drafts.

Each action is the one place it happens; the Anvil's pages call them (docs/loom.md). An agent
only proposes: its draft waits on the call until a person applies it (``loom_draft_apply``:
the Gem's draft apply and the call's record of it, in one transaction) or drops it, and the
Weaver's patterns wait in the suggestions' queue.
"""

import logging
import mimetypes
import uuid
from collections.abc import Iterable
from pathlib import Path, PurePosixPath

from django.conf import settings
from django.contrib.admin.models import CHANGE
from django.core.files.storage import default_storage
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone
from django.utils.text import capfirst
from django_q.tasks import async_task

from events.selectors import source_events
from gem.draft import (
    Draft,
    DraftDiff,
    DraftError,
    draft_diff,
    draft_parse,
    draft_render,
    draft_written,
)
from gem.drafts import draft_apply
from gem.models import Fragment
from gem.selectors import Prompt, agent_prompt, identities_current
from gem.services import fragment_log
from lens.extract import LensError, fragment_drafts, keys_checked, neighbours
from loom.answer import Answer, AnswerError, answer_read
from loom.models import (
    Agent,
    CallStatus,
    DraftState,
    InboxImage,
    LoomCall,
    LoomPrompt,
    Session,
    SessionImage,
    SessionStatus,
    stalled_before,
)
from loom.offline import offline_answer
from mirror.models import Proposer
from mirror.services import Staged, suggestions_stage
from silentstar import claude
from silentstar.words import counted

logger = logging.getLogger(__name__)

DEFAULTS = Path(__file__).resolve().parent / "defaults"
INBOX_FOLDER = "loom/inbox"
SESSIONS_FOLDER = "loom/sessions"
QUESTION_MAX_CHARS = 4000


class LoomError(ValueError):
    """An action the Loom refuses, said so a person can act on it."""


# --- Prompts ---------------------------------------------------------------------------------


def prompt_current(kind: str) -> Prompt:
    """The newest saved instructions of an agent (the shipped default if none is saved)."""
    return agent_prompt(LoomPrompt, kind=kind, defaults=DEFAULTS)


# --- Sessions --------------------------------------------------------------------------------


def session_create(*, topic: str) -> Session:
    topic = " ".join(topic.split())
    if not topic:
        raise LoomError("Give the session a topic.")
    return Session.objects.create(topic=topic)


def _session_open(session_id: int) -> Session:
    session = Session.objects.get(pk=session_id)
    if not session.is_open:
        raise LoomError(f"The session “{session.topic}” is closed: it can be read, not changed.")
    return session


def _touched(session_id: int) -> None:
    Session.objects.filter(pk=session_id).update(updated_at=timezone.now())


def session_fragment_add(*, session_id: int, key: str) -> None:
    """Add a fragment of the Gem to an open session (LoomError naming near keys if unknown)."""
    session = _session_open(session_id)
    try:
        (key,) = keys_checked([key.strip()])
    except LensError as error:
        raise LoomError(str(error)) from None
    session.fragments.add(key)
    _touched(session_id)


def session_close(*, session_id: int) -> None:
    """Close a session: it stays readable with everything it holds; a call still queued or
    running finishes and its draft can still be applied or dropped from the call's page."""
    Session.objects.filter(pk=session_id, status=SessionStatus.OPEN).update(
        status=SessionStatus.CLOSED, closed_at=timezone.now(), updated_at=timezone.now()
    )


# --- The photo inbox -------------------------------------------------------------------------


def _inbox_room_check(adding: int) -> None:
    """Refuse ``adding`` photos that would take the inbox past ``LOOM_INBOX_MAX_PHOTOS``."""
    most = settings.LOOM_INBOX_MAX_PHOTOS
    waiting = InboxImage.objects.count()
    if waiting + adding <= most:
        return
    if waiting >= most:
        raise LoomError(
            f"The inbox holds {counted(most, 'photo')}, its most: take some into a session or "
            "throw some away first."
        )
    raise LoomError(
        f"The inbox holds at most {counted(most, 'photo')} and has {waiting:,} already: send "
        f"at most {counted(most - waiting, 'photo')}, or take some into a session or throw some "
        "away first."
    )


def inbox_add(*, uploads: Iterable[tuple]) -> list[InboxImage]:
    """Keep checked photos in the inbox: ``uploads`` are (file, extension) pairs, the extension
    read from the image's real format. All are kept or, if one cannot be written, none; none
    past ``LOOM_INBOX_MAX_PHOTOS`` waiting (LoomError), counted before the files are written
    and again in the transaction that records them."""
    uploads = list(uploads)
    _inbox_room_check(len(uploads))
    saved: list[str] = []
    try:
        for upload, extension in uploads:
            name = f"{INBOX_FOLDER}/{uuid.uuid4().hex}.{extension}"
            saved.append(default_storage.save(name, upload))
        with transaction.atomic():
            _inbox_room_check(len(uploads))
            return [
                InboxImage.objects.create(image=name, original_name=(upload.name or "")[:255])
                for name, (upload, _) in zip(saved, uploads, strict=True)
            ]
    except Exception:
        for name in saved:  # a write cut short (a full disk) leaves nothing behind
            default_storage.delete(name)
        raise


def inbox_discard(*, image_ids: Iterable[int]) -> int:
    """Throw inbox photos away (a blurred shot, the wrong thing): their rows, then their files.
    Returns how many went."""
    images = list(InboxImage.objects.filter(pk__in=list(image_ids)))
    InboxImage.objects.filter(pk__in=[image.pk for image in images]).delete()
    for image in images:
        default_storage.delete(image.image.name)
    return len(images)


def session_images_take(*, session_id: int, image_ids: Iterable[int]) -> list[SessionImage]:
    """Move inbox photos into a session: each file is copied under the session's folder, then
    the session's image is recorded and the inbox row removed in one transaction, and only then
    is the inbox file deleted. A failure part-way loses nothing: a photo either is still in the
    inbox or is the session's (at worst its inbox file is left over on disk)."""
    session = _session_open(session_id)
    taken = []
    for inbox in InboxImage.objects.filter(pk__in=list(image_ids)).order_by("uploaded_at", "id"):
        suffix = PurePosixPath(inbox.image.name).suffix
        try:
            with inbox.image.open("rb") as source:
                name = default_storage.save(
                    f"{SESSIONS_FOLDER}/{session.pk}/{uuid.uuid4().hex}{suffix}", source
                )
        except FileNotFoundError:
            raise LoomError(
                f"The photo “{inbox}” has no file any more; discard it from the inbox"
                + (f" ({len(taken)} taken before it)." if taken else ".")
            ) from None
        try:
            with transaction.atomic():
                deleted, _ = InboxImage.objects.filter(pk=inbox.pk).delete()
                image = None
                if deleted:  # another request may have taken it meanwhile
                    image = SessionImage.objects.create(
                        session=session,
                        image=name,
                        original_name=inbox.original_name,
                        uploaded_at=inbox.uploaded_at,
                    )
        except Exception:
            default_storage.delete(name)
            raise
        if image is None:
            default_storage.delete(name)
            continue
        default_storage.delete(inbox.image.name)
        taken.append(image)
    if taken:
        _touched(session.pk)
    return taken


# --- Calls -----------------------------------------------------------------------------------


def loom_call_start(
    *,
    agent: str,
    fragment_key: str,
    question: str,
    session_id: int | None = None,
    image_ids: Iterable[int] = (),
    enqueue: bool = True,
) -> LoomCall:
    """Queue a call of a facet agent on one fragment; photos only for the Cataloguer, and only
    the session's own."""
    if agent not in Agent.values:
        raise LoomError(f"“{agent}” is not one of the Loom's agents.")
    question = question.strip()
    if len(question) > QUESTION_MAX_CHARS:
        raise LoomError(f"The question is too long: at most {QUESTION_MAX_CHARS} characters.")
    try:
        (fragment_key,) = keys_checked([fragment_key.strip()])
    except LensError as error:
        raise LoomError(str(error)) from None
    image_ids = list(dict.fromkeys(image_ids))
    if image_ids and agent != Agent.CATALOGUER:
        raise LoomError("Only the Cataloguer looks at photos.")
    if session_id is not None:
        _session_open(session_id)
    images = list(SessionImage.objects.filter(pk__in=image_ids, session_id=session_id))
    if len(images) != len(image_ids):
        raise LoomError("Choose photos of this session only.")
    with transaction.atomic():
        call = LoomCall.objects.create(
            session_id=session_id, agent=agent, fragment_key=fragment_key, question=question
        )
        call.images.set(images)
    if session_id is not None:
        _touched(session_id)
    if enqueue:
        _enqueue(call.pk)
    return call


def _enqueue(call_id: int) -> None:
    async_task("loom.tasks.run_loom_call_task", call_id, group="loom")


def loom_call_retry(*, call_id: int, enqueue: bool = True) -> LoomCall:
    """Queue again, as it was asked, a call that failed or whose worker stopped."""
    now = timezone.now()
    updated = (
        LoomCall.objects.filter(pk=call_id)
        .filter(
            Q(status=CallStatus.FAILED)
            | Q(status=CallStatus.RUNNING, started_at__lt=stalled_before(now))
        )
        .update(status=CallStatus.QUEUED, error="", finished_at=None)
    )
    if not updated:
        raise LoomError("Only a call that failed (or whose worker stopped) can be tried again.")
    if enqueue:
        _enqueue(call_id)
    return LoomCall.objects.get(pk=call_id)


def loom_call_again(*, call_id: int, enqueue: bool = True) -> LoomCall:
    """Ask again what a call asked, as a new call (``loom_call_start``) whose agent reads the Gem
    as it is now: for a draft written against a fragment that changed since. In the call's
    session, with its photos, while the session is open; the first call keeps its draft."""
    call = LoomCall.objects.select_related("session").get(pk=call_id)
    in_session = call.session is not None and call.session.is_open
    return loom_call_start(
        agent=call.agent,
        fragment_key=call.fragment_key,
        question=call.question,
        session_id=call.session_id if in_session else None,
        image_ids=list(call.images.values_list("pk", flat=True)) if in_session else [],
        enqueue=enqueue,
    )


def loom_call_claim(*, call_id: int) -> bool:
    """Take a call for running: a queued one, or one whose worker stopped (the task queue
    delivers a task again when its worker did not finish it). False when there is none to take
    (taken, done, failed, gone)."""
    now = timezone.now()
    return bool(
        LoomCall.objects.filter(pk=call_id)
        .filter(
            Q(status=CallStatus.QUEUED)
            | Q(status=CallStatus.RUNNING, started_at__lt=stalled_before(now))
        )
        .update(status=CallStatus.RUNNING, started_at=now, attempts=F("attempts") + 1)
    )


class _Refused(Exception):
    """What the agent answered cannot be used; the message says why, for people."""


def loom_call_run(*, call_id: int) -> LoomCall:
    """Make a claimed call: send the Lens extract (and photos), read the answer, check its draft,
    then keep notes and draft and stage the Weaver's patterns, all at once; or mark the call
    failed with a clear message, nothing staged."""
    call = LoomCall.objects.get(pk=call_id)
    try:
        answer, sources, extract = _ask(call)
    except _Refused as error:
        return _failed(call, str(error))
    except Exception as error:  # a fault of ours: the call must not stay "running"
        logger.exception("Loom call %s failed", call_id)
        return _failed(call, f"The call failed unexpectedly ({type(error).__name__}: {error}).")
    with transaction.atomic(using="summaries"), transaction.atomic():
        staged = suggestions_stage(
            proposer=Proposer.LOOM,
            suggestions=[
                Staged(type="pattern", content=pattern.content, reason=pattern.reason)
                for pattern in answer.patterns
            ],
        )
        LoomCall.objects.filter(pk=call.pk).update(
            status=CallStatus.DONE,
            notes=answer.notes,
            draft=_draft_written(answer.draft, extract=extract),
            draft_base=extract if answer.draft.strip() else "",
            draft_state=DraftState.PROPOSED if answer.draft.strip() else "",
            sources=sources,
            suggestion_ids=[suggestion.pk for suggestion in staged],
            error="",
            finished_at=timezone.now(),
        )
    return LoomCall.objects.get(pk=call.pk)


def _failed(call: LoomCall, message: str) -> LoomCall:
    LoomCall.objects.filter(pk=call.pk).update(
        status=CallStatus.FAILED, error=message, finished_at=timezone.now()
    )
    return LoomCall.objects.get(pk=call.pk)


def _draft_written(text: str, *, extract: str) -> str:
    """The agent's draft saying what it was written against: the extract it read."""
    if not text.strip():
        return text
    return draft_render(draft_written(draft_parse(text), base=draft_parse(extract).fragments))


def _ask(call: LoomCall) -> tuple[Answer, dict, str]:
    name = capfirst(call.get_agent_display())
    try:
        (fragment,) = fragment_drafts(keys_checked([call.fragment_key]))
    except LensError as error:
        raise _Refused(f"The fragment is gone: {error}") from None
    near = [n.key for n in neighbours(fragment) if n.key != fragment.key]
    near = list(dict.fromkeys(near))
    extract = draft_render(Draft(fragments=[fragment, *fragment_drafts(near)]))
    images = list(call.images.order_by("taken_at", "id")) if call.agent == Agent.CATALOGUER else []
    content = []
    for image in images:
        try:
            with image.image.open("rb") as handle:
                data = handle.read()
            media_type = mimetypes.guess_type(image.image.name)[0] or ""
            content.append(claude.image_block(data=data, media_type=media_type))
        except (OSError, ValueError) as error:
            raise _Refused(f"The photo “{image}” cannot be sent: {error}") from None
    asked = call.question or "Nothing in particular: look the fragment over."
    who = identities_current()
    speakers = ", ".join(
        f"{name} ({'companion' if name in who.companions else 'person'})" for name in who.names
    )
    content.append(
        {
            "type": "text",
            "text": (
                f"The fragment asked about: {call.fragment_key}\n"
                f"Its neighbours: {', '.join(near) or 'none'}\n"
                f"The identities who speak: {speakers or 'none'}\n"
                f"Photos attached: {len(images)}\n\n"
                f"The person asks: {asked}\n\n"
                f"The Lens extract (the fragment, then its neighbours):\n\n{extract}"
            ),
        }
    )
    prompt = prompt_current(call.agent)
    tools = claude.web_search_tools() if call.agent == Agent.RESEARCHER else []
    try:
        reply = claude.complete(
            component=f"loom-{call.agent}",
            system=[{"type": "text", "text": prompt.text}],
            messages=[{"role": "user", "content": content}],
            offline_answer=lambda: offline_answer(
                agent=call.agent,
                key=call.fragment_key,
                inventory=fragment.tiers["inventory"],
                question=call.question,
                images=len(images),
            ),
            model=settings.LOOM_MODEL,
            max_tokens=settings.AGENT_MAX_TOKENS,
            tools=tools,
        )
    except claude.ClaudeError as error:
        raise _Refused(f"{name} could not be reached: {error}") from None
    sources = {
        "fragment": call.fragment_key,
        "neighbours": near,
        "images": [image.pk for image in images],
        "prompt": prompt.version_id,
    }
    if call.agent == Agent.RESEARCHER:
        sources["web_search"] = {"offered": bool(tools), "searches": reply.usage.web_searches}
    if reply.stop_reason == "max_tokens":
        raise _Refused(
            f"{name}'s answer was cut off at {settings.AGENT_MAX_TOKENS} tokens "
            "(SILENTSTAR_AGENT_MAX_TOKENS), so its draft may be incomplete."
        )
    try:
        answer = answer_read(reply.text, patterns_allowed=call.agent == Agent.WEAVER)
    except AnswerError as error:
        raise _Refused(f"{name}'s answer cannot be read: {error}") from None
    _draft_checked(answer, given=[call.fragment_key, *near], name=name)
    return answer, sources, extract


def _draft_checked(answer: Answer, *, given: list[str], name: str) -> None:
    """The draft must read, name only the fragments the agent was given, and compare with the
    Gem (its edges and sources name what exists); line numbers are the answer's."""
    if not answer.draft.strip():
        return
    try:
        draft = draft_parse(answer.draft)
        for fragment in draft.fragments:
            if fragment.key not in given:
                exists = Fragment.objects.filter(pk=fragment.key).exists()
                why = "which it was not given" if exists else "which the Gem does not have"
                raise DraftError(
                    f"the draft names “{fragment.key}”, {why}: a Loom draft may change only "
                    f"the fragment asked about and the neighbours it was given "
                    f"({', '.join(given)})",
                    line=fragment.line,
                )
        draft_diff(draft, events_found=source_events)
    except DraftError as error:
        where = ""
        if error.line is not None:
            where = f"line {answer.draft_line + error.line} of the answer: "
        message = str(error).removeprefix(f"line {error.line}: ")
        raise _Refused(f"{name}'s draft cannot be used: {where}{message}") from None


# --- Drafts ----------------------------------------------------------------------------------


def loom_draft_apply(*, call_id: int, user, text: str, parts=None) -> DraftDiff:
    """Apply a call's draft (its own, or ``text`` as a person edited it) through the Gem's
    ``draft_apply`` and record it on the call, in one transaction: both happen or neither. Each
    fragment's admin log says which agent's draft it was and what the agent read.

    A draft over a fragment that changed since the agent read it is refused with a
    ``DraftConflict`` and the call keeps it; ``parts`` applies it part by part."""
    with transaction.atomic():
        call = LoomCall.objects.select_for_update().get(pk=call_id)
        if call.draft_state != DraftState.PROPOSED:
            raise LoomError(_decided(call))
        diff = draft_apply(
            text, user=user, events_found=source_events, base=call.draft_base, parts=parts
        )
        LoomCall.objects.filter(pk=call_id).update(
            draft_state=DraftState.APPLIED,
            applied_text="" if text == call.draft else text,
            decided_by_id=user.pk,
            decided_at=timezone.now(),
        )
        edited = " (edited)" if text != call.draft else ""
        for key in [*diff.fragments_created, *diff.fragments_changed()]:
            fragment_log(
                user_id=user.pk,
                fragment_key=key,
                action=CHANGE,
                message=f"Applied {call.get_agent_display()}'s draft{edited} of Loom call "
                f"{call.pk}; it read {sources_text(call.sources)}",
            )
    return diff


def loom_draft_drop(*, call_id: int, user_id: int) -> None:
    """Drop a call's draft: nothing changes in the Gem; the call keeps it, marked dropped."""
    updated = LoomCall.objects.filter(pk=call_id, draft_state=DraftState.PROPOSED).update(
        draft_state=DraftState.DROPPED, decided_by_id=user_id, decided_at=timezone.now()
    )
    if not updated:
        raise LoomError(_decided(LoomCall.objects.get(pk=call_id)))


def _decided(call: LoomCall) -> str:
    if call.draft_state:
        return f"This draft was already {call.draft_state}."
    return "This call has no draft to apply or drop."


def sources_text(sources: dict) -> str:
    """What a call read, in words: for its page and the admin log."""
    parts = [f"fragment {sources.get('fragment', '?')}"]
    near = sources.get("neighbours") or []
    parts.append(f"neighbours {', '.join(near)}" if near else "no neighbours")
    images = sources.get("images") or []
    if images:
        parts.append("photos " + ", ".join(f"#{i}" for i in images))
    search = sources.get("web_search")
    if search is not None:
        if search.get("offered"):
            count = search.get("searches", 0)
            parts.append(f"web search offered, {count} search{'es' if count != 1 else ''}")
        else:
            parts.append("web search not offered")
    prompt = sources.get("prompt")
    parts.append(f"prompt version {prompt}" if prompt else "the default prompt")
    return "; ".join(parts)
