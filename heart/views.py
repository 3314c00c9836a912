"""The chat page and its partials: thin views that validate, call a service and render.

Every view needs a signed-in user (``LoginRequiredMiddleware``) with the memory permission
(``gem.access.MemoryAccessMiddleware``) except the web app manifest and the service worker,
which installers fetch before anyone signs in. Partials live in
``templates/heart/chat.html``; htmx requests get them, page requests get the whole page.
"""

import functools
import logging
import uuid
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_not_required
from django.contrib.staticfiles import finders
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.files.storage import default_storage
from django.db import transaction
from django.db.models import Max, Q
from django.http import Http404, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.utils import timezone
from django.utils.cache import patch_vary_headers
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from events.corrected import View
from events.models import Event, Nudge, Turn, TurnStatus
from events.render import (
    USER,
    Message,
    identity_colors,
    identity_slug,
    message_display,
    reply_edited,
    side_of,
)
from events.selectors import views_of
from gem.models import Identity, IdentitySide
from gem.selectors import Identities, identities_current
from gem.services import IdentityRow, identities_set, time_zone_set
from gem.state import state_get
from gem.zone import TIME_ZONE, owner_time_zone
from heart.corrections import (
    CorrectionError,
    correction_make,
    event_purge,
    purge_reach,
    reply_choose,
)
from heart.first_run import first_run_set_aside, greeting_text, nothing_said
from heart.forms import (
    FIRST_ROWS,
    CorrectionForm,
    HistoryForm,
    IdentityFormSet,
    MessageForm,
    PushDeviceForm,
    PushSubscriptionForm,
    TimeZoneForm,
)
from heart.models import PushSubscription
from heart.push import push_public_key, subscription_remove, subscription_save
from heart.services import (
    TurnOrderError,
    greeting_record,
    identity_default,
    turn_again,
    turn_retry,
    turn_submit,
    user_text_compose,
)
from heart.worker_state import turn_waiting, worker_state
from mirror.models import Summary
from mirror.selectors import summary_markers
from silentstar.disks import DiskTrouble, disk_said, disk_trouble
from silentstar.uploads import uploaded_file_response

logger = logging.getLogger(__name__)

HISTORY_PAGE_SIZE = 30
EVENT_FIELDS = ("id", "ts", "content", "actor", "image")


@dataclass(frozen=True)
class Speaker:
    name: str
    slug: str


@dataclass(frozen=True)
class Entry:
    """One item of the history: a message (with the turn it answers, for a reply), or a turn
    still pending or failed after its message."""

    message: Message | None = None
    turn: Turn | None = None
    summary: Summary | None = None  # a Mirror summary, shown collapsed after what it covers
    # A reply among several to one message: where it stands, and the turns of its neighbours.
    replies: int = 0
    position: int = 0
    previous_turn: int | None = None
    next_turn: int | None = None
    again: bool = False  # the newest reply, which can be asked for again
    waiting: str = ""  # why a pending reply still waits
    wrote_first: str = ""  # why she wrote first, for a reply to no message


# --- Pages and partials --------------------------------------------------------------------


@require_GET
def chat(request):
    form = HistoryForm(request.GET, required=False)
    if not form.is_valid():
        return _error(request, "“before” must be an event id.", status=400)
    who = identities_current()
    context = {
        **_history(before=form.cleaned_data.get("before"), who=who),
        "companion": _companion(who),
        **_speakers(who),
    }
    if request.htmx:
        response = render(request, "heart/chat.html#history", context)
    else:
        context |= {
            "identity_colors": identity_colors(Identity.objects.values_list("name", "color")),
            "user_identities": [Speaker(name, identity_slug(name)) for name in who.users],
            "identity_chosen": identity_default(who),
            "offline": settings.COMPANION_OFFLINE,
            "local_model": settings.HEART_MODEL if settings.LOCAL_SERVER else "",
            "worker": worker_state(),
            "after": context["newest_shown"],
        }
        response = render(request, "heart/chat.html", context)
    patch_vary_headers(response, ("HX-Request",))
    return response


@require_GET
def history(request):
    form = HistoryForm(request.GET)
    if not form.is_valid():
        return _error(request, "“before” must be an event id.", status=400)
    who = identities_current()
    context = {
        **_history(before=form.cleaned_data["before"], who=who),
        "companion": _companion(who),
        **_speakers(who),
    }
    return render(request, "heart/chat.html#history-page", context)


@require_POST
def message_send(request):
    who = identities_current()
    form = MessageForm(request.POST, request.FILES, identities=who.users)
    if not form.is_valid():
        return _refuse(request, form.first_error(), status=400)
    # A message never goes out nameless while the person has an identity to send it as.
    identity = form.cleaned_data["identity"] or identity_default(who) or None
    upload = form.cleaned_data["image"]
    text = user_text_compose(
        message=form.cleaned_data["message"], identity=identity, knowledge_tags=[]
    )
    started = timezone.now()
    try:
        image = _image_store(upload, extension=form.image_extension) if upload else ""
        try:
            turn = turn_submit(text=text, actor=identity or "", image=image)
        except Exception:
            _image_discard(image)
            raise
    except Exception as error:
        trouble = disk_trouble(error)
        if trouble is None:
            raise
        logger.error("A message was refused: %s (%s)", trouble.what, error)
        reason = _disk_refusal(trouble, text=text, actor=identity or "", since=started)
        return _refuse(request, reason, status=trouble.status)
    if _is_page_post(request):
        return _back_to_chat()
    turn = Turn.objects.select_related("event", "reply_event").get(pk=turn.pk)
    context = {
        "message": _message(turn.event, who=who),
        **_turn_context(turn, who=who),
    }
    return render(request, "heart/chat.html#sent", context, status=201)


@require_GET
def turn_detail(request, turn_id: int):
    turn = get_object_or_404(Turn.objects.select_related("reply_event"), pk=turn_id)
    context = _turn_context(turn, who=identities_current())
    response = render(request, "heart/chat.html#turn", context)
    if turn.again_of_id is not None and turn.status == TurnStatus.DONE:
        response["HX-Refresh"] = "true"  # the page shows the reply that counts now, alone
    return response


@require_POST
def turn_again_view(request, turn_id: int):
    """Ask again for the newest reply."""
    get_object_or_404(Turn.objects.only("id"), pk=turn_id)
    try:
        turn_again(turn_id=turn_id)
    except TurnOrderError as error:
        return _refuse(request, str(error), status=409)
    worker = worker_state()
    if worker.state == "offline":  # said where the person looks, not only on the dot
        messages.info(request, f"Asked again. {worker.said}.")
    return _back_to_chat()


@require_POST
def reply_choose_view(request, turn_id: int):
    """Make this turn's reply the one that counts among the replies to its message."""
    turn = get_object_or_404(Turn.objects.only("id", "reply_event_id"), pk=turn_id)
    try:
        reply_choose(turn_id=turn.pk, made_by=request.user.get_username(), user_id=request.user.pk)
    except CorrectionError as error:
        return _refuse(request, str(error), status=409)
    return _back_to_chat(at_event=turn.reply_event_id)


@require_POST
def turn_retry_view(request, turn_id: int):
    get_object_or_404(Turn.objects.only("id"), pk=turn_id)
    try:
        turn_retry(turn_id=turn_id)
    except ValueError as error:
        return _refuse(request, str(error), status=409)
    if _is_page_post(request):
        return _back_to_chat()
    turn = Turn.objects.select_related("reply_event").get(pk=turn_id)
    return render(request, "heart/chat.html#turn", _turn_context(turn, who=identities_current()))


@require_POST
def event_correct(request, event_id: int):
    """Edit, give to another identity, take back or restore a message of the chat."""
    event = get_object_or_404(Event.objects.only("id", "actor", "content"), pk=event_id)
    form = CorrectionForm(request.POST)
    if not form.is_valid():
        return _refuse(request, form.first_error(), status=400)
    kind, text = form.cleaned_data["kind"], form.cleaned_data["text"]
    view = views_of([(event.pk, event.actor, event.content)])[event.pk]
    who = identities_current()
    if kind == "edit":
        is_reply = Turn.objects.filter(reply_event_id=event.pk).exists()
        if side_of(view.actor, who.sides, is_reply=is_reply) != USER:
            text = reply_edited(view.content, text, who.names)  # what she did not show stays
        elif view.actor:
            text = user_text_compose(message=text, identity=view.actor, knowledge_tags=[])
    try:
        made = correction_make(
            event_id=event.pk,
            kind=kind,
            text=text,
            actor=form.cleaned_data["actor"],
            made_by=request.user.get_username(),
            user_id=request.user.pk,
        )
    except CorrectionError as error:
        return _refuse(request, str(error), status=409)
    if made.kept:  # never undone silently: the person decides, in the Anvil
        messages.warning(
            request,
            "Working memory it wrote was changed since, so it stays as it is: "
            + ", ".join(f"item #{item}" for item in made.kept)
            + ". Decide on it in the Anvil.",
        )
    return _back_to_chat(at_event=event.pk)


@require_http_methods(["GET", "POST"])
def event_purge_view(request, event_id: int):
    """The owner's purge of a message taken back: what it reaches and does not, then, on
    confirmation, the purge."""
    if not request.user.is_superuser:
        raise PermissionDenied("Only the owner may purge a message.")
    event = get_object_or_404(Event.objects.only("id", "ts", "actor"), pk=event_id)
    if request.method == "POST":
        try:
            event_purge(event_id=event.pk, purged_by=request.user.get_username())
        except CorrectionError as error:
            return _refuse(request, str(error), status=409)
        messages.success(request, f"Message #{event.pk} is purged: its text is gone.")
        return _back_to_chat()
    try:
        reach = purge_reach(event.pk)
    except CorrectionError as error:
        return _refuse(request, str(error), status=409)
    return render(request, "heart/purge.html", {"event": event, "reach": reach})


@require_http_methods(["GET", "POST"])
def setup(request):
    """Who talks here (the identities, each with a colour) and the time zone."""
    problems: list[str] = []
    if request.method == "POST":
        identities = IdentityFormSet(request.POST, prefix="identity")
        zone = TimeZoneForm(request.POST)
        if identities.is_valid() and zone.is_valid():
            try:
                with transaction.atomic():
                    identities_set(identities=_identity_rows(identities), user_id=request.user.pk)
                    time_zone_set(name=zone.cleaned_data["time_zone"])
            except ValidationError as error:
                problems = error.messages
            else:
                first_run_set_aside(request.session)
                companion = identities_current().default_companion
                greeting_record(companion=companion, text=greeting_text(companion=companion))
                return _back_to_chat()
        else:
            problems = _form_problems(identities, zone)
    else:
        identities = IdentityFormSet(initial=_identity_initial(), prefix="identity")
        zone = TimeZoneForm(initial={"time_zone": owner_time_zone()})
    context = {
        "identities": identities,
        "zone": zone,
        "zone_chosen": state_get(TIME_ZONE) is not None,
        "nothing_said": nothing_said(),
        "problems": problems,
    }
    return render(request, "heart/setup.html", context, status=400 if problems else 200)


@require_POST
def setup_skip(request):
    """Put the set-up off: the offer goes for this session; the page stays at /setup/."""
    first_run_set_aside(request.session)
    back = request.POST.get("next", "")
    if not url_has_allowed_host_and_scheme(
        back, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        return _back_to_chat()
    response = HttpResponseRedirect(back)
    response.status_code = 303
    return response


@require_GET
def worker_status(request):
    """The worker's dot and words; with ``after`` (the newest event the page shows), also what
    she wrote first since, added to the conversation."""
    form = HistoryForm(request.GET, required=False)
    after = form.cleaned_data.get("after") if form.is_valid() else None
    context = {"worker": worker_state(), "after": after}
    if after is not None:
        who = identities_current()
        arrived = _written_first_since(after, who=who)
        if arrived:
            context |= {
                "arrived": arrived,
                "after": arrived[-1].message.event_id,
                "companion": _companion(who),
                **_speakers(who),
            }
    return render(request, "heart/chat.html#worker-status-polled", context)


@require_GET
def image(request, event_id: int):
    """An image the person sent. Uploaded files are never served publicly, only through here."""
    event = get_object_or_404(Event.objects.only("id", "image"), pk=event_id)
    if not event.image:
        raise Http404("This message has no image.")
    return uploaded_file_response(event.image, missing="The image file is missing.")


@login_not_required
@require_GET
def manifest(request):
    return _static_file("heart/manifest.webmanifest", content_type="application/manifest+json")


@login_not_required
@require_GET
def service_worker(request):
    response = _static_file("heart/sw.js", content_type="text/javascript; charset=utf-8")
    response["Service-Worker-Allowed"] = "/"
    response["Cache-Control"] = "no-cache"
    return response


# --- Helpers ---------------------------------------------------------------------------------


def _companion(who: Identities) -> Speaker:
    """Who answers a turn still under way."""
    return Speaker(who.default_companion, identity_slug(who.default_companion))


def _speakers(who: Identities) -> dict:
    """Who a message can be given to: the identities of each side."""
    return {
        "speakers": {
            USER: who.users,
            "companion": [name for name in who.names if name in who.companions],
        }
    }


def _identity_initial() -> list[dict]:
    """The identities as the set-up shows them: the person's first, then the companion's; on a
    new installation, with none, a row for the person and one for the companion."""
    rows = Identity.objects.order_by("id").values("id", "name", "side", "color")
    shown = sorted(rows, key=lambda row: row["side"] != IdentitySide.USER)
    return shown or [dict(row) for row in FIRST_ROWS]


def _identity_rows(identities) -> list[IdentityRow]:
    """The set-up's rows as the Gem takes them: removed rows and untouched blank ones left out."""
    return [
        IdentityRow(
            id=form.cleaned_data["id"],
            name=form.cleaned_data["name"],
            side=form.cleaned_data["side"],
            color=form.cleaned_data["color"],
        )
        for form in identities.forms
        if form.cleaned_data and not form.cleaned_data.get("DELETE")
    ]


def _form_problems(*forms) -> list[str]:
    problems = []
    for form in forms:
        if hasattr(form, "non_form_errors"):
            problems += form.non_form_errors()
            for row in form.errors:
                problems += [error for errors in row.values() for error in errors]
        else:
            problems += [error for errors in form.errors.values() for error in errors]
    return problems


def _message(
    event: Event, *, who: Identities, is_reply: bool = False, view: View | None = None
) -> Message:
    return message_display(
        event_id=event.pk,
        content=event.content,
        actor=event.actor,
        sides=who.sides,
        ts=event.ts,
        has_image=bool(event.image),
        is_reply=is_reply,
        view=view,
    )


def _history(*, before: int | None, who: Identities) -> dict:
    """A page of the log: the newest events before ``before``, oldest first.

    A turn that has not been answered (queued, running or failed) follows its message, so the
    page keeps polling it or offers its retry. Secret replies are left out: they show nothing.
    """
    events = Event.objects.only(*EVENT_FIELDS).order_by("-id")
    if before is not None:
        events = events.filter(id__lt=before)
    page = list(events[: HISTORY_PAGE_SIZE + 1])
    has_earlier = len(page) > HISTORY_PAGE_SIZE
    page = page[:HISTORY_PAGE_SIZE][::-1]
    ids = [event.pk for event in page]
    turns = list(
        Turn.objects.filter(Q(event_id__in=ids) | Q(reply_event_id__in=ids)).order_by("pk")
    )
    replied = {turn.reply_event_id: turn for turn in turns if turn.reply_event_id}
    unanswered = {turn.event_id: turn for turn in turns if turn.status != TurnStatus.DONE}
    asked = {turn.event_id for turn in replied.values()}
    siblings: dict[int, list[int]] = {}
    for event_id, turn_id in (
        Turn.objects.filter(event_id__in=asked, reply_event__isnull=False)
        .order_by("pk")
        .values_list("event_id", "pk")
    ):
        siblings.setdefault(event_id, []).append(turn_id)
    newest = Turn.objects.aggregate(newest=Max("event_id"))["newest"]
    markers = []
    if settings.MIRROR_HISTORY_MARKERS and page:
        markers = summary_markers(first_event_id=page[0].pk, last_event_id=page[-1].pk)
    views = views_of((event.pk, event.actor, event.content) for event in page)
    first = [turn.pk for turn in replied.values() if turn.event_id is None]
    wrote_first = (
        dict(Nudge.objects.filter(turn_id__in=first).values_list("turn_id", "said"))
        if first
        else {}
    )
    entries = []
    worker = functools.cache(worker_state)  # read once a page, and only for a reply waiting
    for event in page:
        message = _message(event, who=who, is_reply=event.pk in replied, view=views[event.pk])
        turn = replied.get(event.pk)
        if not message.is_secret and not message.aside:
            entry = _entry(message, turn, siblings, newest=newest)
            if turn is not None and turn.pk in wrote_first:
                entry = replace(entry, wrote_first=wrote_first[turn.pk])
            entries.append(entry)
        if event.pk in unanswered:
            pending = unanswered[event.pk]
            entries.append(Entry(turn=pending, waiting=_waiting(pending, worker=worker)))
        while markers and markers[0].last_event_id <= event.pk:
            entries.append(Entry(summary=markers.pop(0)))
    return {
        "entries": entries,
        "earlier_before": page[0].pk if has_earlier else None,
        "newest_shown": page[-1].pk if page else 0,
    }


def _written_first_since(after: int, *, who: Identities) -> list[Entry]:
    """Her replies to no message (she wrote first) logged after the event ``after``."""
    turns = list(
        Turn.objects.filter(
            event__isnull=True, status=TurnStatus.DONE, reply_event_id__gt=after
        ).select_related("reply_event", "nudge")
    )
    return [
        Entry(
            message=_message(turn.reply_event, who=who, is_reply=True),
            turn=turn,
            replies=1,
            position=1,
            wrote_first=turn.nudge.said,
        )
        for turn in sorted(turns, key=lambda turn: turn.reply_event_id)
        if hasattr(turn, "nudge")
    ]


def _waiting(turn: Turn, *, worker=worker_state) -> str:
    """Why ``turn``'s reply still waits; "" when it failed (its reason is shown instead).
    ``worker`` gives the worker's state (a page of several waiting replies reads it once)."""
    if turn.status not in (TurnStatus.QUEUED, TurnStatus.RUNNING):
        return ""
    return turn_waiting(turn, worker())


def _entry(
    message: Message, turn: Turn | None, siblings: dict[int, list[int]], *, newest: int | None
) -> Entry:
    """A message's entry; for a reply, where it stands among the replies to its message."""
    if turn is None:
        return Entry(message=message)
    others = siblings.get(turn.event_id, [turn.pk])
    at = others.index(turn.pk) if turn.pk in others else 0
    return Entry(
        message=message,
        turn=turn,
        replies=len(others),
        position=at + 1,
        previous_turn=others[at - 1] if at > 0 else None,
        next_turn=others[at + 1] if at + 1 < len(others) else None,
        again=turn.event_id is not None and turn.event_id == newest,
    )


def _turn_context(turn: Turn, *, who: Identities) -> dict:
    reply, choice = None, {}
    if turn.status == TurnStatus.DONE and turn.reply_event is not None:
        reply = _message(turn.reply_event, who=who, is_reply=True)
        others = Turn.objects.filter(event_id=turn.event_id, reply_event__isnull=False)
        newest = Turn.objects.aggregate(newest=Max("event_id"))["newest"]
        entry = _entry(
            reply,
            turn,
            {turn.event_id: list(others.order_by("pk").values_list("pk", flat=True))},
            newest=newest,
        )
        choice = {
            "replies": entry.replies,
            "position": entry.position,
            "previous_turn": entry.previous_turn,
            "next_turn": entry.next_turn,
            "again": entry.again,
        }
    return {
        "turn": turn,
        "reply": reply,
        "waiting": _waiting(turn),
        "companion": _companion(who),
        **_speakers(who),
        **choice,
    }


def _image_store(upload, *, extension: str) -> str:
    name = f"images/{timezone.now():%Y/%m}/{uuid.uuid4().hex}.{extension}"
    try:
        return default_storage.save(name, upload)
    except OSError:
        default_storage.delete(name)  # a write cut short (a full disk) leaves part of the file
        raise


def _disk_refusal(trouble: DiskTrouble, *, text: str, actor: str, since: datetime) -> str:
    """What the composer says when a full disk or read-only data refused a message: not sent,
    or, when the message reached the log before a later write failed, not to send it twice."""
    if Event.objects.filter(ts__gte=since, content=text, actor=actor).exists():
        return (
            f"Your message is in the log, but its answer could not be queued: {trouble.what}. "
            f"{trouble.remedy}; do not send it again."
        )
    return disk_said(trouble, stopped="Not sent", again="send again; your text is still here")


def _image_discard(name: str) -> None:
    """Delete a stored image whose message did not reach the log; a message already logged
    keeps its image whatever failed after it."""
    if name and not Event.objects.filter(image=name).exists():
        default_storage.delete(name)


def _static_file(path: str, *, content_type: str) -> HttpResponse:
    found = finders.find(path)
    if not found:
        raise Http404(f"{path} is missing from the static files.")
    return HttpResponse(Path(found).read_bytes(), content_type=content_type)


def _is_page_post(request) -> bool:
    """A plain form post (no JavaScript): answer with a redirect, not a partial.

    htmx requests and scripts' fetches (``Sec-Fetch-Mode`` other than ``navigate``) get partials.
    """
    return not request.htmx and request.headers.get("Sec-Fetch-Mode", "navigate") == "navigate"


def _back_to_chat(*, at_event: int | None = None) -> HttpResponseRedirect:
    """To the chat (at an event's message, with ``at_event``), as a page after a post."""
    place = f"#event-{at_event}" if at_event is not None else ""
    response = HttpResponseRedirect(reverse("heart-chat") + place)
    response.status_code = 303
    return response


def _refuse(request, reason: str, *, status: int):
    if _is_page_post(request):
        messages.error(request, reason)
        return _back_to_chat()
    return _error(request, reason, status=status)


def _error(request, reason: str, *, status: int):
    return render(request, "heart/chat.html#composer-error", {"reason": reason}, status=status)


# --- Notifications on the devices that opted in (heart/push.py) ------------------------------


@require_GET
def notifications(request):
    """What a notification sends and to whom, turning them on on this device, and the devices
    that have them on."""
    context = {"devices": PushSubscription.objects.all(), "public_key": push_public_key()}
    return render(request, "heart/notifications.html", context)


@require_POST
def notifications_subscribe(request):
    """Keep this device's subscription, posted by the page's script; answers the devices' list."""
    form = PushSubscriptionForm(request.POST)
    if not form.is_valid():
        context = {"devices": PushSubscription.objects.all(), "problems": _form_problems(form)}
        return render(request, "heart/notifications.html#devices", context, status=400)
    subscription_save(**form.cleaned_data, device=request.headers.get("User-Agent", ""))
    context = {"devices": PushSubscription.objects.all()}
    return render(request, "heart/notifications.html#devices", context)


@require_POST
def notifications_remove(request):
    """Remove a device from those notified (one removed already is simply not there)."""
    form = PushDeviceForm(request.POST)
    if form.is_valid():
        device = PushSubscription.objects.filter(pk=form.cleaned_data["device"]).first()
        if device is not None:
            subscription_remove(endpoint=device.endpoint)
    response = HttpResponseRedirect(reverse("heart-notifications"))
    response.status_code = 303
    return response
