"""The Loom in the Anvil: crystallizing sessions (their fragments, photos and calls), the photo
inbox with its phone upload page, the facet agents' calls (notes, the draft's diff; apply, edit,
drop, retry), "Ask the Loom" from a fragment's page, and the agents' versioned prompts.

Every page is a thin view over ``loom.services``; a draft is applied through the Gem's
``draft_apply`` and recorded on its call in the same transaction (``loom_draft_apply``,
docs/loom.md).
"""

from urllib.parse import urlsplit

from django.conf import settings
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied, TooManyFilesSent
from django.db.models import Count
from django.http import HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils import timezone
from django.utils.html import format_html
from django.utils.text import capfirst
from django.views.decorators.csrf import csrf_exempt, csrf_protect
from django.views.decorators.http import require_POST

from anvil.fragments import draft_parts_chosen, draft_preview_fragments
from anvil.pages import anvil_page, cut_text, row_id
from anvil.proposed import ProposedText, proposed_text_page
from anvil.versions import PromptAdmin
from events.selectors import source_events
from gem.draft import DraftConflict, DraftError, draft_check, draft_diff, draft_parse
from gem.models import Fragment
from loom.forms import (
    CallForm,
    FragmentAddForm,
    InboxForm,
    SessionForm,
    TakeForm,
    too_many_photos,
)
from loom.models import (
    Agent,
    DraftState,
    InboxImage,
    LoomCall,
    LoomPrompt,
    Session,
    SessionImage,
)
from loom.services import (
    LoomError,
    inbox_add,
    inbox_discard,
    loom_call_again,
    loom_call_retry,
    loom_call_start,
    loom_draft_apply,
    loom_draft_drop,
    prompt_current,
    session_close,
    session_create,
    session_fragment_add,
    session_images_take,
    sources_text,
)
from mirror.models import TagSuggestion
from silentstar.uploads import uploaded_file_response
from silentstar.when import when_short
from silentstar.words import counted

POLL_SECONDS = 2
# What the page to edit a call's draft says.
CALL_WORDS = ProposedText(
    intro="Edit the draft, preview what it changes, then apply it. Nothing changes until you "
    "apply.",
    label="The draft",
    apply="Apply this draft",
    back="Back to the call",
)


def _inbox_choices() -> list[tuple[int, str]]:
    return [(image.pk, str(image)) for image in InboxImage.objects.order_by("uploaded_at", "id")]


def _back(request, default: str) -> HttpResponseRedirect:
    """Back to the page a form came from (a local path only), or ``default``."""
    target = request.POST.get("next", "")
    return HttpResponseRedirect(target if target.startswith("/admin/") else default)


def _can_apply(request) -> bool:
    return request.user.has_perms(["gem.add_fragment", "gem.change_fragment"])


def _can_call(request) -> bool:
    """Starting a call spends money: it takes the right to add calls, not only to see them."""
    return request.user.has_perm("loom.add_loomcall")


# --- Sessions --------------------------------------------------------------------------------


@admin.register(Session)
class SessionAdmin(admin.ModelAdmin):
    list_display = ["topic", "status", "fragment_count", "image_count", "call_count", "updated"]
    list_filter = ["status"]
    search_fields = ["topic"]

    def get_queryset(self, request):
        return (
            super()
            .get_queryset(request)
            .annotate(
                fragment_total=Count("fragments", distinct=True),
                image_total=Count("images", distinct=True),
                call_total=Count("calls", distinct=True),
            )
        )

    @admin.display(description="fragments", ordering="fragment_total")
    def fragment_count(self, session):
        return session.fragment_total

    @admin.display(description="photos", ordering="image_total")
    def image_count(self, session):
        return session.image_total

    @admin.display(description="calls", ordering="call_total")
    def call_count(self, session):
        return session.call_total

    @admin.display(description="last worked on", ordering="updated_at")
    def updated(self, session):
        return when_short(session.updated_at)

    def has_delete_permission(self, request, obj=None):
        return False  # a session is closed, never deleted

    def get_urls(self):
        view = self.admin_site.admin_view
        return [
            path(
                "<int:session_id>/fragments/",
                view(require_POST(self.fragment_add_view)),
                name="loom-session-fragment-add",
            ),
            path(
                "<int:session_id>/take/",
                view(require_POST(self.take_view)),
                name="loom-session-take",
            ),
            path(
                "<int:session_id>/call/",
                view(require_POST(self.call_view)),
                name="loom-session-call",
            ),
            path(
                "<int:session_id>/close/",
                view(require_POST(self.close_view)),
                name="loom-session-close",
            ),
            path("photos/<int:photo_id>/", view(self.image_view), name="loom-session-image"),
            *super().get_urls(),
        ]

    def add_view(self, request, form_url="", extra_context=None):
        if not self.has_add_permission(request):
            raise PermissionDenied
        form = SessionForm(request.POST or None)
        if request.method == "POST" and form.is_valid():
            try:
                session = session_create(topic=form.cleaned_data["topic"])
            except LoomError as error:
                form.add_error("topic", str(error))
            else:
                return HttpResponseRedirect(self._workspace_url(session.pk))
        return anvil_page(self, request, "admin/loom/session_new.html", "New session", form=form)

    def change_view(self, request, object_id, form_url="", extra_context=None):
        """A session's workspace: its fragments, photos, the inbox, and its calls."""
        if not self.has_view_permission(request):
            raise PermissionDenied
        session = get_object_or_404(Session, pk=row_id(object_id))
        return self._workspace(request, session)

    def _workspace(self, request, session, *, call_form=None, fragment_form=None, take_form=None):
        fragments = list(session.fragments.order_by("key"))
        keys = [fragment.key for fragment in fragments]
        images = list(session.images.all())
        inbox = list(InboxImage.objects.order_by("uploaded_at", "id"))
        calls = list(session.calls.select_related("decided_by").prefetch_related("images"))
        return anvil_page(
            self,
            request,
            "admin/loom/session.html",
            f"Session: {session.topic}",
            session=session,
            fragments=fragments,
            images=images,
            inbox=inbox,
            calls=_call_contexts(request, calls, back=self._workspace_url(session.pk)),
            call_form=call_form
            or CallForm(keys=keys, images=[(image.pk, str(image)) for image in images]),
            fragment_form=fragment_form or FragmentAddForm(),
            take_form=take_form or TakeForm(images=[(image.pk, str(image)) for image in inbox]),
            poll_seconds=POLL_SECONDS,
        )

    def _workspace_url(self, session_id: int) -> str:
        return reverse("admin:loom_session_change", args=[session_id])

    def _session_for_change(self, request, session_id: int) -> Session:
        if not self.has_change_permission(request):
            raise PermissionDenied
        return get_object_or_404(Session, pk=session_id)

    def fragment_add_view(self, request, session_id: int):
        session = self._session_for_change(request, session_id)
        form = FragmentAddForm(request.POST)
        if form.is_valid():
            try:
                session_fragment_add(session_id=session.pk, key=form.cleaned_data["key"])
            except LoomError as error:
                form.add_error("key", str(error))
            else:
                return HttpResponseRedirect(self._workspace_url(session.pk))
        return self._workspace(request, session, fragment_form=form)

    def take_view(self, request, session_id: int):
        session = self._session_for_change(request, session_id)
        form = TakeForm(request.POST, images=_inbox_choices())
        if form.is_valid():
            try:
                taken = session_images_take(
                    session_id=session.pk, image_ids=[int(i) for i in form.cleaned_data["images"]]
                )
            except LoomError as error:
                form.add_error(None, str(error))
            else:
                self.message_user(request, f"Took {counted(len(taken), 'photo')} from the inbox.")
                return HttpResponseRedirect(self._workspace_url(session.pk))
        return self._workspace(request, session, take_form=form)

    def call_view(self, request, session_id: int):
        session = self._session_for_change(request, session_id)
        if not _can_call(request):
            raise PermissionDenied
        keys = list(session.fragments.values_list("key", flat=True))
        images = [(image.pk, str(image)) for image in session.images.all()]
        form = CallForm(request.POST, keys=keys, images=images)
        if form.is_valid():
            try:
                loom_call_start(
                    agent=form.cleaned_data["agent"],
                    fragment_key=form.cleaned_data["fragment_key"],
                    question=form.cleaned_data["question"],
                    session_id=session.pk,
                    image_ids=form.image_ids(),
                )
            except LoomError as error:
                form.add_error(None, str(error))
            else:
                return HttpResponseRedirect(self._workspace_url(session.pk) + "#calls")
        return self._workspace(request, session, call_form=form)

    def close_view(self, request, session_id: int):
        session = self._session_for_change(request, session_id)
        session_close(session_id=session.pk)
        self.message_user(request, f"Closed “{session.topic}”: it stays here to read.")
        return HttpResponseRedirect(self._workspace_url(session.pk))

    def image_view(self, request, photo_id: int):
        if not self.has_view_permission(request):
            raise PermissionDenied
        photo = get_object_or_404(SessionImage, pk=photo_id)
        return uploaded_file_response(photo.image, missing="The photo's file is missing.")


# --- The photo inbox -------------------------------------------------------------------------


@admin.register(InboxImage)
class InboxImageAdmin(admin.ModelAdmin):
    list_display = ["thumbnail", "original_name", "uploaded"]
    list_display_links = None

    @admin.display(description="photo")
    def thumbnail(self, image):
        url = reverse("admin:loom-inbox-image", args=[image.pk])
        return format_html(
            '<img src="{}" alt="{}" class="loom-thumb" loading="lazy">', url, str(image)
        )

    @admin.display(description="uploaded", ordering="uploaded_at")
    def uploaded(self, image):
        return when_short(image.uploaded_at)

    def has_change_permission(self, request, obj=None):
        return False  # a photo waits as it came; a session takes it

    def delete_model(self, request, obj):
        inbox_discard(image_ids=[obj.pk])

    def delete_queryset(self, request, queryset):
        inbox_discard(image_ids=queryset.values_list("pk", flat=True))

    def get_urls(self):
        view = self.admin_site.admin_view
        return [
            path("<int:image_id>/photo/", view(self.image_view), name="loom-inbox-image"),
            *super().get_urls(),
        ]

    @csrf_exempt
    def add_view(self, request, form_url="", extra_context=None):
        """The phone's upload page: the camera, then the photos wait in the inbox.

        Django refuses a post of more files than ``DATA_UPLOAD_MAX_NUMBER_FILES`` as the post is
        read, and the CSRF check would read it first, answering with Django's own error page: so
        the page reads the post itself, says that refusal on the page (nothing is written), and
        only then checks the CSRF token (Django's documented ``csrf_exempt`` and
        ``csrf_protect`` pairing)."""
        if not self.has_add_permission(request):
            raise PermissionDenied
        try:
            request.FILES  # noqa: B018  (reading the post is what may fail)
        except TooManyFilesSent:
            for _ in iter(lambda: request.read(2**16), b""):
                pass  # the rest of the post, thrown away so that the page can answer
            return self._upload_page(request, InboxForm(), refusal=too_many_photos())
        return csrf_protect(self._upload)(request)

    def _upload(self, request):
        form = InboxForm(request.POST or None, request.FILES or None)
        if request.method == "POST" and form.is_valid():
            try:
                added = inbox_add(uploads=form.uploads)
            except LoomError as error:
                form.add_error(None, str(error))
            else:
                self.message_user(request, f"{counted(len(added), 'photo')} in the inbox.")
                return HttpResponseRedirect(reverse("admin:loom_inboximage_add"))
        return self._upload_page(request, form)

    def _upload_page(self, request, form: InboxForm, *, refusal: str = ""):
        return anvil_page(
            self,
            request,
            "admin/loom/inbox_upload.html",
            "Photos to the inbox",
            form=form,
            refusal=refusal,
            inbox=InboxImage.objects.order_by("-uploaded_at", "-id")[:12],
            waiting=InboxImage.objects.count(),
            most=settings.LOOM_INBOX_MAX_PHOTOS,
            at_once=settings.DATA_UPLOAD_MAX_NUMBER_FILES,
        )

    def image_view(self, request, image_id: int):
        if not self.has_view_permission(request):
            raise PermissionDenied
        photo = get_object_or_404(InboxImage, pk=image_id)
        return uploaded_file_response(photo.image, missing="The photo's file is missing.")


# --- Calls -----------------------------------------------------------------------------------


def _call_contexts(request, calls: list[LoomCall], *, back: str) -> list[dict]:
    """Calls as their cards show them, their staged suggestions read in one query."""
    ids = [pk for call in calls for pk in call.suggestion_ids]
    staged = list(TagSuggestion.objects.filter(pk__in=ids)) if ids else []
    return [
        _call_context(
            request,
            call,
            suggestions=[s for s in staged if s.pk in call.suggestion_ids],
            back=back,
        )
        for call in calls
    ]


def _call_context(request, call: LoomCall, *, suggestions: list, back: str) -> dict:
    """A call as its card shows it: the draft's diff against the Gem as it is now, while the
    draft waits; what it read; its staged suggestions; whether its worker stopped. ``back`` is
    the page its buttons lead back to."""
    diff = diff_error = None
    changed_since = ""
    if call.draft_state == DraftState.PROPOSED:
        try:
            draft = draft_parse(call.draft)
            diff = draft_diff(draft, events_found=source_events)
            check = draft_check(draft, base=call.draft_base)
            changed_since = check.as_text() if check.conflicts else ""
        except DraftError as error:
            diff_error = str(error)
    return {
        "call": call,
        "diff": diff,
        "fragments": draft_preview_fragments(diff) if diff else [],
        "diff_error": diff_error,
        "changed_since": changed_since,
        "sources": sources_text(call.sources) if call.sources else "",
        "suggestions": suggestions,
        "can_apply": _can_apply(request),
        "poll_seconds": POLL_SECONDS,
        "stalled": call.is_stalled(now=timezone.now()),
        "back": back,
    }


@admin.register(LoomCall)
class LoomCallAdmin(admin.ModelAdmin):
    list_display = ["called", "agent", "fragment_key", "asked", "status", "draft_state", "session"]
    list_filter = ["agent", "status", "draft_state"]
    search_fields = ["fragment_key", "question", "notes"]
    list_select_related = ["session"]

    @admin.display(description="called", ordering="created_at")
    def called(self, call):
        return when_short(call.created_at)

    @admin.display(description="question")
    def asked(self, call):
        return cut_text(call.question)

    def has_add_permission(self, request):
        return False  # a call starts from a session or a fragment's page

    def has_delete_permission(self, request, obj=None):
        return False

    def get_urls(self):
        view = self.admin_site.admin_view
        return [
            path("ask/", view(self.ask_view), name="loom-call-ask"),
            path("<int:call_id>/status/", view(self.status_view), name="loom-call-status"),
            path(
                "<int:call_id>/apply/", view(require_POST(self.apply_view)), name="loom-call-apply"
            ),
            path("<int:call_id>/edit/", view(self.edit_view), name="loom-call-edit"),
            path("<int:call_id>/drop/", view(require_POST(self.drop_view)), name="loom-call-drop"),
            path(
                "<int:call_id>/retry/", view(require_POST(self.retry_view)), name="loom-call-retry"
            ),
            path(
                "<int:call_id>/again/", view(require_POST(self.again_view)), name="loom-call-again"
            ),
            *super().get_urls(),
        ]

    def change_view(self, request, object_id, form_url="", extra_context=None):
        if not self.has_view_permission(request):
            raise PermissionDenied
        call = get_object_or_404(LoomCall.objects.select_related("session"), pk=row_id(object_id))
        return anvil_page(
            self,
            request,
            "admin/loom/call.html",
            f"{capfirst(call.get_agent_display())} on “{call.fragment_key}”",
            **_call_contexts(request, [call], back=request.path)[0],
        )

    def _call_url(self, call: LoomCall) -> str:
        if call.session_id is not None:
            return reverse("admin:loom_session_change", args=[call.session_id]) + f"#call-{call.pk}"
        return reverse("admin:loom_loomcall_change", args=[call.pk])

    def status_view(self, request, call_id: int):
        """A call's card, for the page polling it while it is queued or running."""
        if not self.has_view_permission(request):
            raise PermissionDenied
        call = get_object_or_404(LoomCall, pk=call_id)
        # The card's buttons lead back to the page that polls it, which htmx names.
        shown = urlsplit(request.htmx.current_url or "").path if request.htmx else ""
        back = shown if shown.startswith("/admin/") else self._call_url(call)
        (context,) = _call_contexts(request, [call], back=back)
        return TemplateResponse(request, "admin/loom/_call.html", context)

    def ask_view(self, request):
        """Ask the Loom about one fragment, without a session (from the fragment's page)."""
        if not self.has_view_permission(request):
            raise PermissionDenied
        key = request.GET.get("key", "")
        fragment = get_object_or_404(Fragment, pk=key)
        if request.method == "POST" and not _can_call(request):
            raise PermissionDenied
        form = CallForm(request.POST or None, keys=None)
        if request.method == "POST" and form.is_valid():
            try:
                call = loom_call_start(
                    agent=form.cleaned_data["agent"],
                    fragment_key=fragment.key,
                    question=form.cleaned_data["question"],
                )
            except LoomError as error:
                form.add_error(None, str(error))
            else:
                return HttpResponseRedirect(self._call_url(call))
        return anvil_page(
            self,
            request,
            "admin/loom/ask.html",
            f"Ask the Loom about “{fragment.key}”",
            fragment=fragment,
            form=form,
        )

    def apply_view(self, request, call_id: int):
        """Apply a call's draft (its own, or the text a person edited) and record it on the
        call, in one transaction."""
        if not _can_apply(request):
            raise PermissionDenied
        call = get_object_or_404(LoomCall, pk=call_id)
        text = request.POST.get("text", call.draft)
        try:
            diff = loom_draft_apply(
                call_id=call.pk, user=request.user, text=text, parts=draft_parts_chosen(request)
            )
        except (DraftError, LoomError) as error:
            # From the edit page, or over a fragment changed since: to the edit page, the text
            # kept.
            conflict = isinstance(error, DraftConflict)  # the page shows what changed
            if "text" in request.POST or conflict:
                return self._edit_page(
                    request, call, text=text, error="" if conflict else str(error)
                )
            self.message_user(request, f"The draft was not applied: {error}", messages.ERROR)
        else:
            changed = [*diff.fragments_created, *diff.fragments_changed()]
            self.message_user(
                request,
                f"Applied the draft: {', '.join(changed)} changed."
                if changed
                else "Applied: the Gem already held this draft, nothing changed.",
            )
        return _back(request, self._call_url(call))

    def edit_view(self, request, call_id: int):
        """Edit a draft before applying it: a text area, its preview, then apply."""
        call = get_object_or_404(LoomCall, pk=call_id)
        if not _can_apply(request):
            raise PermissionDenied
        text = request.POST.get("text", call.draft)
        return self._edit_page(request, call, text=text)

    def _edit_page(self, request, call, *, text: str, error: str = ""):
        return proposed_text_page(
            self,
            request,
            title=f"Edit the draft of {call.get_agent_display()} on “{call.fragment_key}”",
            original=call,
            text=text,
            words=CALL_WORDS,
            edit_url=reverse("admin:loom-call-edit", args=[call.pk]),
            apply_url=reverse("admin:loom-call-apply", args=[call.pk]),
            back=self._call_url(call),
            error=error,
            base=call.draft_base,
            again_url=reverse("admin:loom-call-again", args=[call.pk])
            if _can_call(request)
            else "",
        )

    def drop_view(self, request, call_id: int):
        if not self.has_change_permission(request):
            raise PermissionDenied
        call = get_object_or_404(LoomCall, pk=call_id)
        try:
            loom_draft_drop(call_id=call.pk, user_id=request.user.pk)
        except LoomError as error:
            self.message_user(request, str(error), messages.ERROR)
        else:
            self.message_user(request, "Dropped the draft: nothing changed.")
        return _back(request, self._call_url(call))

    def again_view(self, request, call_id: int):
        """Ask the same agent the same question again, as a new call that reads the Gem as it
        is now (the draft of this one stays on it)."""
        if not _can_call(request):
            raise PermissionDenied
        call = get_object_or_404(LoomCall, pk=call_id)
        try:
            again = loom_call_again(call_id=call.pk)
        except LoomError as error:
            self.message_user(request, str(error), messages.ERROR)
            return HttpResponseRedirect(self._call_url(call))
        return HttpResponseRedirect(self._call_url(again))

    def retry_view(self, request, call_id: int):
        if not self.has_change_permission(request):
            raise PermissionDenied
        call = get_object_or_404(LoomCall, pk=call_id)
        try:
            loom_call_retry(call_id=call.pk)
        except LoomError as error:
            self.message_user(request, str(error), messages.ERROR)
        return _back(request, self._call_url(call))


@admin.register(LoomPrompt)
class LoomPromptAdmin(PromptAdmin):
    """The facet agents' prompts, one per agent."""

    default_kind = Agent.CATALOGUER

    def prompt_text(self, kind: str) -> str:
        return prompt_current(kind).text
