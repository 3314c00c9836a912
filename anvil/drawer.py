"""The memory drawer: the Anvil's daily work done beside the chat.

What lingers in working memory now (its type, live score, due date and whose it is) with
forget and edit; the plans due in the next days; the pending suggestions with promote, edit and
reject; a count of what waits (``anvil.waiting``); a link to the last reply's context. Filtered
by identity ("what luna holds": items said by or about them).

The drawer is a page of the Anvil's site: the same sign-in, the same permissions (viewing a
section needs its model's view permission, acting its change permission), and the same services
as the Anvil's lists, so every decision is written in the admin log as it is there. The chat
loads it with htmx into a panel; without JavaScript it is a page of its own.
"""

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.db.models import Q
from django.http import HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils import timezone
from django.utils.http import urlencode

from anvil.forms import DrawerDecisionForm, DrawerFilterForm, DrawerItemForm, due_changed
from anvil.waiting import Waiting, decisions_waiting, waiting_for
from events.models import Nudge, NudgeReason, NudgeStatus, Turn, TurnStatus
from gem import decay
from gem.models import WorkingMemory, WorkingMemoryStatus, WorkingMemoryType
from gem.selectors import identities_current, working_memory_scores
from gem.services import WorkingMemoryError, working_memory_forget, working_memory_update
from gem.state import turn_counter_current
from heart.nudges import nudge_reasons_on, nudge_reasons_set, quiet_hours_said
from mirror.models import SuggestionStatus, TagSuggestion
from mirror.services import SuggestionError, suggestion_promote, suggestion_reject
from silentstar.words import counted, cut_words

PLAN_DAYS = 7  # plans due within this many days are listed on their own
LINGERING_SHOWN = 40  # the strongest items; the rest are in the Anvil's list
SUGGESTIONS_SHOWN = 20  # the newest pending suggestions; the rest are in the queue

ITEM_FIELDS = ("id", "type", "content", "subject", "actor", "due", "turn", "refreshed_at", "hidden")


@dataclass(frozen=True)
class Item:
    """An active working-memory item as the drawer shows it."""

    id: int
    type: str
    content: str
    subject: str
    actor: str
    due: datetime | None
    hidden: bool
    score: float
    surfacing: bool  # its score puts it in the context now


@dataclass(frozen=True)
class Drawer:
    identity: str  # "" for everyone
    identities: list[str]
    items: list[Item] | None  # None: the account may not see working memory
    items_more: int
    plans: list[Item]
    suggestions: list[TagSuggestion] | None  # None: the account may not see the queue
    suggestions_more: int
    waiting: list[Waiting]
    badge: int
    last_turn: int | None  # the newest answered turn, whose context the inspector shows
    may_change_items: bool
    may_decide: bool
    writing_first: "WritingFirst | None" = None  # None: the account may not set it


@dataclass(frozen=True)
class WritingFirst:
    """The reasons she may write first (each with whether it is on), the rules in words, and
    the nudges waiting with what holds them."""

    reasons: list[tuple[str, str, bool]]  # (value, words, on)
    rules: list[str]
    waiting: list[Nudge]


def drawer_read(user, *, identity: str = "", now: datetime | None = None) -> Drawer:
    """What the drawer shows ``user`` now, for one identity or (``""``) everyone."""
    now = now or timezone.now()
    items = plans = None
    items_more = 0
    if user.has_perm("gem.view_workingmemory"):
        everything = _items_scored(identity=identity, now=now)
        items, items_more = everything[:LINGERING_SHOWN], max(0, len(everything) - LINGERING_SHOWN)
        soon = now + timedelta(days=PLAN_DAYS)
        plans = sorted(
            (item for item in everything if item.type == WorkingMemoryType.PLAN and item.due),
            key=lambda item: item.due,
        )
        plans = [item for item in plans if item.due <= soon]
    suggestions, suggestions_more = None, 0
    if user.has_perm("mirror.view_tagsuggestion"):
        pending = TagSuggestion.objects.filter(status=SuggestionStatus.PENDING)
        if identity:
            pending = pending.filter(subject__iexact=identity)
        total = pending.count()
        suggestions = list(pending.order_by("-created_at", "-id")[:SUGGESTIONS_SHOWN])
        suggestions_more = total - len(suggestions)
    waiting = waiting_for(user)
    last_turn = None
    if user.has_perm("heart.view_contextsnapshot"):
        last_turn = (
            Turn.objects.filter(status=TurnStatus.DONE, reply_event__isnull=False)
            .order_by("-pk")
            .values_list("pk", flat=True)
            .first()
        )
    return Drawer(
        identity=identity,
        identities=identities_current().names,
        items=items,
        items_more=items_more,
        plans=plans or [],
        suggestions=suggestions,
        suggestions_more=suggestions_more,
        waiting=waiting,
        badge=decisions_waiting(waiting),
        last_turn=last_turn,
        may_change_items=user.has_perm("gem.change_workingmemory"),
        may_decide=user.has_perm("mirror.change_tagsuggestion"),
        writing_first=_writing_first() if user.has_perm(NUDGE_PERMISSION) else None,
    )


NUDGE_PERMISSION = "events.change_nudge"


def _writing_first() -> WritingFirst:
    on = nudge_reasons_on()
    hours = quiet_hours_said()
    quiet = f"never in the quiet hours ({hours})" if hours else "at any hour"
    rules = [
        f"{quiet}, at most {counted(settings.NUDGE_DAILY_MAX, 'time')} a day;",
        "never while a reply is on its way, nor within "
        f"{counted(settings.NUDGE_AFTER_MESSAGE_MINUTES, 'minute')} of your last message;",
        f"none after {counted(settings.NUDGE_UNANSWERED_MAX, 'message')} of hers in a row went "
        "unanswered, until you write.",
    ]
    reasons = [
        (NudgeReason.PLAN.value, "when a plan comes due and nothing lately mentions it", False),
        (
            NudgeReason.SILENCE.value,
            f"after {counted(settings.NUDGE_SILENCE_DAYS, 'day')} without a word from you",
            False,
        ),
        (
            NudgeReason.PROPOSALS.value,
            "when the Compass's proposals have waited more than "
            f"{counted(settings.NUDGE_PROPOSALS_AFTER_HOURS, 'hour')}",
            False,
        ),
    ]
    return WritingFirst(
        reasons=[(value, words, value in on) for value, words, _ in reasons],
        rules=rules,
        waiting=list(Nudge.objects.filter(status=NudgeStatus.WAITING).order_by("found_at")),
    )


def _items_scored(*, identity: str, now: datetime) -> list[Item]:
    """The active items (said by or about ``identity`` when one is given), strongest first."""
    active = WorkingMemory.objects.filter(status=WorkingMemoryStatus.ACTIVE)
    if identity:
        active = active.filter(Q(actor__iexact=identity) | Q(subject__iexact=identity))
    rows = list(active.order_by().values_list(*ITEM_FIELDS, named=True))
    scores = working_memory_scores(rows, now=now, current_turn=turn_counter_current())
    items = [_item(row, score) for row, score in zip(rows, scores, strict=True)]
    items.sort(key=lambda item: (-item.score, item.id))
    return items


def _item(row: Any, score: float) -> Item:
    return Item(
        id=row.id,
        type=row.type,
        content=row.content,
        subject=row.subject,
        actor=row.actor,
        due=row.due,
        hidden=row.hidden,
        score=score,
        surfacing=decay.is_surfacing(score),
    )


# --- Views (pages of the Anvil's site: ``anvil.site.AnvilSite.get_urls``) ---------------------


def drawer_view(site, request) -> TemplateResponse:
    """The drawer: its panel's contents for htmx, a page of its own otherwise."""
    form = DrawerFilterForm(request.GET, identities=identities_current().names)
    identity = form.cleaned_data["identity"] if form.is_valid() else ""
    return _drawer_response(site, request, identity=identity)


def badge_view(site, request) -> TemplateResponse:
    """The count of what waits for a decision, for the chat's memory button."""
    waiting = waiting_for(request.user)
    return TemplateResponse(
        request, "anvil/drawer.html#badge", {"badge": decisions_waiting(waiting)}
    )


def item_forget_view(site, request, item_id: int):
    """Forget a lingering item: dropped, and its words never staged again."""
    _may(request, "gem.change_workingmemory")
    item = get_object_or_404(WorkingMemory.objects.only("id", "content"), pk=item_id)
    forgotten = working_memory_forget(
        item_ids=[item.pk],
        by=request.user.get_username(),
        user_id=request.user.pk,
        now=timezone.now(),
    )
    if forgotten:
        words = cut_words(item.content)
        messages.success(
            request, f"Forgot “{words}”: it is dropped, and its words are never staged again."
        )
    else:
        messages.warning(request, f"“{cut_words(item.content)}” was no longer lingering.")
    return _after(site, request)


def item_edit_view(site, request, item_id: int):
    """Change a lingering item's words (and a plan's due date), by the rules of every edit."""
    _may(request, "gem.change_workingmemory")
    item = get_object_or_404(WorkingMemory.objects.only("id", "type", "due"), pk=item_id)
    form = DrawerItemForm(request.POST)
    if not form.is_valid():
        messages.error(request, f"Not saved: {form.first_error()}")
        return _after(site, request)
    changes: dict[str, Any] = {"content": form.cleaned_data["content"]}
    if item.type == WorkingMemoryType.PLAN and due_changed(form.cleaned_data["due"], item.due):
        changes["due"] = form.cleaned_data["due"]
    try:
        written = working_memory_update(
            item_id=item.pk, at=timezone.now(), user_id=request.user.pk, **changes
        )
    except WorkingMemoryError as error:
        messages.error(request, f"Not saved: {error}")
    else:
        messages.success(request, f"Saved: “{cut_words(written.item.content)}”.")
    return _after(site, request)


def suggestion_decide_view(site, request, suggestion_id: int):
    """Promote a pending suggestion (with the person's edits of its words and due date) into
    working memory, or reject it."""
    _may(request, "mirror.change_tagsuggestion")
    suggestion = get_object_or_404(TagSuggestion, pk=suggestion_id)
    form = DrawerDecisionForm(request.POST)
    if not form.is_valid():
        messages.error(request, f"Not decided: {form.first_error()}")
        return _after(site, request)
    try:
        if form.cleaned_data["decision"] == DrawerDecisionForm.PROMOTE:
            item = suggestion_promote(
                suggestion_id=suggestion.pk,
                user_id=request.user.pk,
                edits=form.edits_of(suggestion),
            )
            messages.success(request, f"Now in working memory: “{cut_words(item.content)}”.")
        else:
            suggestion_reject(suggestion_id=suggestion.pk, user_id=request.user.pk)
            messages.success(request, f"Rejected: “{cut_words(suggestion.content)}”.")
    except SuggestionError as error:
        messages.error(request, f"Not decided: {error}")
    return _after(site, request)


def writing_first_view(site, request):
    """Turn on exactly the reasons ticked for her to write first."""
    _may(request, NUDGE_PERMISSION)
    chosen = set(request.POST.getlist("reasons")) & set(NudgeReason.values)
    nudge_reasons_set(chosen, user_id=request.user.pk)
    if chosen:
        named = ", ".join(NudgeReason(value).label for value in sorted(chosen))
        messages.success(request, f"She may write first for {named}.")
    else:
        messages.success(request, "She writes only when written to.")
    return _after(site, request)


def _drawer_response(site, request, *, identity: str) -> TemplateResponse:
    drawer = drawer_read(request.user, identity=identity)
    context = {"drawer": drawer, "title": "Memory", "plan_days": PLAN_DAYS}
    if request.htmx:
        return TemplateResponse(request, "anvil/drawer.html#contents", context)
    return TemplateResponse(request, "anvil/drawer.html", {**site.each_context(request), **context})


def _after(site, request):
    """After an action: the drawer again (htmx), or a redirect to its page (a plain post)."""
    identity = request.POST.get("identity", "")
    if request.htmx:
        form = DrawerFilterForm({"identity": identity}, identities=identities_current().names)
        return _drawer_response(
            site, request, identity=form.cleaned_data["identity"] if form.is_valid() else ""
        )
    url = reverse("admin:drawer")
    response = HttpResponseRedirect(
        f"{url}?{urlencode({'identity': identity})}" if identity else url
    )
    response.status_code = 303  # a page after a post
    return response


def _may(request, permission: str) -> None:
    if not request.user.has_perm(permission):
        raise PermissionDenied
