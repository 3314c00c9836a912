"""Texts kept as versions: the ambient prose, the wake texts and the Mirror's prompts (the
Compass's and the Loom's have their pages in their modules). Every save adds a version through
the Gem's ``text_version_add``, none is changed or removed, and any two can be compared."""

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db import models
from django.db.models import Exists, OuterRef, Q
from django.http import HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.urls import path, reverse
from django.utils.html import format_html

from anvil.pages import anvil_page
from anvil.textdiff import text_change_summary, text_diff_html
from gem.models import (
    AmbientProse,
    WakeText,
)
from gem.selectors import (
    ambient_prose_check,
    ambient_prose_current,
    wake_text_current,
)
from gem.services import text_version_add
from mirror.models import MirrorPrompt, MirrorPromptKind
from mirror.passes import prompt_current


class VersionedTextAdmin(admin.ModelAdmin):
    """A text kept as versions: every save adds a version, none is changed or removed, and any
    two can be compared. A version's page is the form of a new version that starts from it;
    saving it makes that the newest (so an old version comes back by saving its page)."""

    actions = ["versions_compare"]
    formfield_overrides = {
        models.TextField: {"widget": forms.Textarea(attrs={"rows": 20, "cols": 100})}
    }
    version_fields: tuple[str, ...] = ("content",)  # what a person writes in a version

    def get_fields(self, request, obj=None):
        return list(self.version_fields) if obj is None else self.version_page_fields()

    def get_readonly_fields(self, request, obj=None):
        if obj is None:
            return []
        return [name for name in self.version_page_fields() if name not in self.version_fields]

    def version_page_fields(self) -> list[str]:
        return [*self.version_fields, "author", "created_at"]

    def render_change_form(self, request, context, *args, **kwargs):
        # One save button: a second version straight after the first is the same text again.
        context["show_save_and_add_another"] = False
        context["show_save_and_continue"] = False
        context["show_delete_link"] = False
        return super().render_change_form(request, context, *args, **kwargs)

    def has_delete_permission(self, request, obj=None):
        return False

    def author_of(self, request):
        """What the ``author`` field of a new version holds: the account."""
        return request.user

    def save_model(self, request, obj, form, change):
        # Always a new version, written by the Gem's one service: the version the form was
        # opened on stays as it was, and the form's object becomes the new one.
        version = text_version_add(
            model=self.model,
            content=obj.content,
            author=self.author_of(request),
            **{name: getattr(obj, name) for name in self.model.text_fields},
        )
        obj.pk, obj.created_at, obj.author = version.pk, version.created_at, version.author
        obj._state.adding, obj._state.db = False, version._state.db

    def response_change(self, request, obj):
        self.message_user(request, f"Saved as a new version: {obj}.")
        return HttpResponseRedirect(
            reverse(f"admin:{self.opts.app_label}_{self.opts.model_name}_changelist")
        )

    def get_queryset(self, request):
        """Each version with whether it is the one in use (no newer version of its text), read
        in the list's one query."""
        newer = self.model.objects.filter(
            Q(**{name: OuterRef(name) for name in self.model.text_fields}),
            Q(created_at__gt=OuterRef("created_at"))
            | Q(created_at=OuterRef("created_at"), pk__gt=OuterRef("pk")),
        )
        return super().get_queryset(request).annotate(in_use=~Exists(newer))

    @admin.display(boolean=True, description="in use", ordering="-in_use")
    def is_current(self, version):
        return version.in_use

    @admin.display(description="content")
    def excerpt(self, version):
        return version.content[:120]

    @admin.display(description="compare")
    def compare_previous(self, version):
        url = reverse(f"admin:{self.opts.app_label}_{self.opts.model_name}_diff")
        return format_html('<a href="{}?new={}">with the one before</a>', url, version.pk)

    def same_text(self, version) -> Q:
        """The versions of the same text as ``version``."""
        return Q(**{name: getattr(version, name) for name in self.model.text_fields})

    def version_before(self, version):
        """The version ``version`` replaced, or None for the first."""
        return (
            self.model.objects.filter(self.same_text(version))
            .filter(
                Q(created_at__lt=version.created_at)
                | Q(created_at=version.created_at, pk__lt=version.pk)
            )
            .order_by("-created_at", "-pk")
            .first()
        )

    def construct_change_message(self, request, form, formsets, add=False):
        # Called once the new version is saved: it is compared with the one it replaced.
        version = form.instance
        before = self.version_before(version)
        changes = text_change_summary(before.content if before else "", version.content)
        return f"New version: {changes}"

    def get_urls(self):
        name = f"{self.opts.app_label}_{self.opts.model_name}_diff"
        return [
            path("diff/", self.admin_site.admin_view(self.diff_view), name=name),
            *super().get_urls(),
        ]

    @admin.action(description="Compare the two selected versions")
    def versions_compare(self, request, queryset):
        if queryset.count() != 2:
            self.message_user(request, "Select exactly two versions to compare.", messages.ERROR)
            return None
        old, new = queryset.order_by("created_at", "pk")
        url = reverse(f"admin:{self.opts.app_label}_{self.opts.model_name}_diff")
        return HttpResponseRedirect(f"{url}?old={old.pk}&new={new.pk}")

    def diff_view(self, request):
        """Two versions side by side: ``?old=&new=`` ids, or ``?new=`` alone for the version
        it replaced."""
        if not self.has_view_permission(request):
            raise PermissionDenied
        try:
            new = get_object_or_404(self.model, pk=int(request.GET["new"]))
            old_id = request.GET.get("old")
            old = get_object_or_404(self.model, pk=int(old_id)) if old_id else None
        except (KeyError, ValueError):
            self.message_user(
                request, "Say which versions to compare: ?old=ID&new=ID.", messages.ERROR
            )
            return HttpResponseRedirect(
                reverse(f"admin:{self.opts.app_label}_{self.opts.model_name}_changelist")
            )
        old = old or self.version_before(new)
        old_text, old_label = (old.content, str(old)) if old else ("", "(nothing before)")
        return anvil_page(
            self,
            request,
            "admin/gem/version_diff.html",
            f"Compare {self.opts.verbose_name}s",
            old=old,
            new=new,
            diff=text_diff_html(old_text, new.content, old_label=old_label, new_label=str(new)),
            summary=text_change_summary(old_text, new.content),
        )


@admin.register(AmbientProse)
class AmbientProseAdmin(VersionedTextAdmin):
    list_display = ["created_at", "author", "is_current", "excerpt", "compare_previous"]
    list_filter = ["created_at", "author"]
    search_fields = ["content"]

    def version_page_fields(self) -> list[str]:
        return ["content", "key_check", "author", "created_at"]

    def get_changeform_initial_data(self, request):
        return {"content": ambient_prose_current()}

    @admin.display(description="keys")
    def key_check(self, version):
        return _key_check_text(ambient_prose_check(version.content))

    def add_view(self, request, form_url="", extra_context=None):
        extra_context = {**(extra_context or {}), "check": ambient_prose_check()}
        return super().add_view(request, form_url, extra_context)

    def response_add(self, request, obj, post_url_continue=None):
        check = _key_check_text(ambient_prose_check(obj.content))
        self.message_user(request, f"Saved as the new ambient prose. {check}")
        return super().response_add(request, obj, post_url_continue)


def _key_check_text(check) -> str:
    missing = ", ".join(f"[{key}]" for key in check.missing) or "none"
    unmentioned = ", ".join(check.unmentioned) or "none"
    return f"Named without a fragment: {missing}. Fragments never mentioned: {unmentioned}."


@admin.register(WakeText)
class WakeTextAdmin(VersionedTextAdmin):
    list_display = ["kind", "created_at", "author", "is_current", "excerpt", "compare_previous"]
    list_filter = ["kind", "created_at"]
    search_fields = ["content"]
    version_fields = ("kind", "content")

    def get_changeform_initial_data(self, request):
        kind = request.GET.get("kind", "wake")
        return {"kind": kind, "content": wake_text_current(kind)}


class PromptAdmin(VersionedTextAdmin):
    """An agent's prompts, one text per kind, versioned: saving always adds a version, and the
    newest of a kind is used. A new version starts from the kind's current text (``?kind=``,
    else ``default_kind``), its shipped default while none is saved."""

    list_display = ["kind", "created_at", "author", "is_current", "excerpt", "compare_previous"]
    list_filter = ["kind", "created_at"]
    search_fields = ["content"]
    version_fields = ("kind", "content")
    default_kind: str

    def prompt_text(self, kind: str) -> str:
        """The kind's current instructions."""
        raise NotImplementedError

    def get_changeform_initial_data(self, request):
        kinds = self.model._meta.get_field("kind").choices
        kind = request.GET.get("kind", self.default_kind)
        if kind not in {value for value, _ in kinds}:
            kind = self.default_kind
        return {"kind": kind, "content": self.prompt_text(kind)}


@admin.register(MirrorPrompt)
class MirrorPromptAdmin(PromptAdmin):
    """The Mirror's pass prompts."""

    default_kind = MirrorPromptKind.SUMMARISE

    def author_of(self, request):
        return request.user.get_username()  # a name: accounts live in another store

    def prompt_text(self, kind: str) -> str:
        return prompt_current(kind)
