"""Imports from other companions in the Anvil: the upload page and its preview (the draft and
the wake text as diffs, the memories to stage, the conversation with its speakers asked for,
the Mirror's cost), the import itself (queued for a worker, its progress followed on its run's
page), each run's page, and the proposals an import staged,
applied, edited or dropped one by one (``anvil.proposals``). A file too large to preview in a
page request is read by a worker (``anvil.tasks``), its run's page following it to the preview.

Every page is a thin view over ``transfer.bridges``: the uploaded file is kept in the default
storage under ``imports/<sha256>``, so the Import button reads the very bytes the preview read,
and the original stays (docs/bridges.md).
"""

from django import forms
from django.conf import settings
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db.models import Max, Min
from django.http import HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.template.loader import render_to_string
from django.urls import path, reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_POST

from anvil.fragments import draft_parts_chosen, draft_preview_fragments
from anvil.pages import anvil_page, row_id
from anvil.proposals import (
    ProposalError,
    WakeConflict,
    proposal_apply,
    proposal_drop,
    proposal_may_decide,
)
from anvil.proposed import ProposedText, proposed_text_page
from anvil.site import IMPORT_PERMISSION
from anvil.textdiff import text_diff_html
from events.selectors import source_events
from gem.draft import DraftConflict, DraftDiff, DraftError, draft_check, draft_diff, draft_parse
from gem.models import IdentitySide
from gem.selectors import identities_current
from mirror.models import Proposer
from silentstar.uploads import megabytes, upload_max_bytes
from silentstar.when import when_short
from silentstar.words import counted, quoted
from transfer.bridges import (
    ADDED_TO,
    FORMAT_NAMES,
    PREVIEW_LISTED,
    BridgePlan,
    PreviewReady,
    Speaker,
    bridge_plan,
    bundle_read,
    counts_said,
    draft_diff_listed,
    entries_left_out_said,
    file_keep,
    file_refused,
    import_enqueue,
    import_holder,
    kept_plan,
    more_said,
    preview_enqueue,
    preview_import,
    preview_ready,
    run_finished_by,
    text_added,
    text_current,
)
from transfer.bundle import BridgeError
from transfer.models import (
    BridgeFormat,
    ImportedMessage,
    ImportedProposal,
    ImportRun,
    ProposalKind,
    ProposalState,
    RunStatus,
)

RUN_TEMPLATE = "admin/transfer/run.html"
PREVIEW_TEMPLATE = "admin/transfer/preview.html"
PREVIEW_TASK = "anvil.tasks.preview_import_task"
WAKE_CONTEXT_LINES = 3  # of the wake text in use, the lines shown above what an import adds
POLL_SECONDS = 1  # how often a run's page asks how far it has come
FILE_FIELD = "file"  # its upload limit is the upload handler's for this name


# --- What a run wrote ------------------------------------------------------------------------


def run_conversation(run: ImportRun) -> tuple[int, int] | None:
    """The first and last event a run wrote, or None when it wrote none."""
    span = ImportedMessage.objects.filter(run_id=run.pk).aggregate(
        first=Min("event_id"), last=Max("event_id")
    )
    return None if span["first"] is None else (span["first"], span["last"])


# --- Forms -----------------------------------------------------------------------------------


class ImportUploadForm(forms.Form):
    """Which format, and the file."""

    format = forms.ChoiceField(choices=BridgeFormat.choices, label="Format")
    file = forms.FileField(label="File", allow_empty_file=True)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.limit = upload_max_bytes(FILE_FIELD)
        self.fields["file"].help_text = f"At most {megabytes(self.limit)}."

    def clean_file(self):
        upload = self.cleaned_data["file"]
        if refused := file_refused(f"“{upload.name}”", size=upload.size, limit=self.limit):
            raise forms.ValidationError(refused)
        return upload


class KeptFileForm(forms.Form):
    """The file the preview read: its SHA-256, format and name (the Import button's post)."""

    sha256 = forms.RegexField(regex=r"^[0-9a-f]{64}$", widget=forms.HiddenInput)
    format = forms.ChoiceField(choices=BridgeFormat.choices, widget=forms.HiddenInput)
    file_name = forms.CharField(max_length=255, widget=forms.HiddenInput)


class PreviewedRunForm(forms.Form):
    """The run a worker previewed (the Import button's post on its page)."""

    run = forms.IntegerField(widget=forms.HiddenInput)


class SpeakersForm(forms.Form):
    """Who each speaker of the conversation is here: one of the identities on its side,
    chosen already when one has its name, to be chosen when none has."""

    def __init__(self, *args, speakers: list[Speaker], **kwargs):
        super().__init__(*args, **kwargs)
        self.speakers = speakers
        who = identities_current()
        sides = who.sides
        for index, speaker in enumerate(speakers):
            names = [name for name in who.names if sides[name] == speaker.side]
            side = "the person’s" if speaker.side == IdentitySide.USER else "the companion’s"
            self.fields[f"speaker_{index}"] = forms.ChoiceField(
                choices=[("", "— choose —"), *((name, name) for name in names)],
                initial=speaker.identity or "",
                label=speaker.name,
                help_text=f"On {side} side, {counted(speaker.messages, 'message')}.",
                error_messages={"required": f"Choose who “{speaker.name}” is here."},
            )

    def mapping(self) -> dict[str, str]:
        return {
            speaker.name: self.cleaned_data[f"speaker_{index}"]
            for index, speaker in enumerate(self.speakers)
        }


# What the page to edit a proposal says, by its kind.
PROPOSAL_WORDS = {
    kind: ProposedText(
        intro=f"Edit the {what}, preview what it changes, then apply it. Nothing changes until "
        "you apply; the text as proposed is kept beside yours.",
        label="The text to apply",
        apply="Apply this text",
        back="Back to the proposal",
    )
    for kind, what in (
        (ProposalKind.DRAFT, "draft"),
        *((kind, f"text to add to the {added.what}") for kind, added in ADDED_TO.items()),
    )
}


class ProposalEditForm(forms.Form):
    text = forms.CharField(
        strip=False,
        label="The text to apply",
        widget=forms.Textarea(attrs={"rows": 18, "spellcheck": "false"}),
    )


# --- What the pages show ---------------------------------------------------------------------


def preview_html(plan: BridgePlan) -> str:
    """What importing would do, drawn up for the preview page: in the page request for a small
    file, by the worker for a large one (``anvil.tasks``), kept on its run until it is shown."""
    return render_to_string(f"{PREVIEW_TEMPLATE}#plan", preview_context(plan))


def preview_context(plan: BridgePlan) -> dict:
    """The preview of an import, as its page shows it."""
    diff = draft_error = None
    if plan.draft_text and not plan.draft_here:
        try:
            diff = plan.draft_diff
        except DraftError as error:
            draft_error = str(error)
    wake_diff = prose_diff = None
    if plan.wake_section and not plan.wake_here:
        wake_diff = _wake_diff(plan.wake_base, plan.wake_section, new_label="with the import")
    if plan.prose_section and not plan.prose_here:
        prose_diff = _wake_diff(plan.prose_base, plan.prose_section, new_label="with the import")
    times = [message.at for message in plan.bundle.messages]
    return {
        "plan": plan,
        "format_name": FORMAT_NAMES.get(plan.bundle.format, plan.bundle.format),
        **_draft_listed(diff),
        "memories": plan.suggestions[:PREVIEW_LISTED],
        "memories_more": more_said(len(plan.suggestions), "memory", "memories"),
        "draft_error": draft_error,
        "wake_diff": wake_diff,
        "prose_diff": prose_diff,
        "left_out": entries_left_out_said(plan.left_out[:PREVIEW_LISTED]),
        "left_out_more": more_said(len(plan.left_out), "entry left out", "entries left out"),
        "first_at": min(times) if times else None,
        "last_at": max(times) if times else None,
        "estimate": plan.estimate if plan.bundle.messages else None,
    }


def _draft_listed(diff: DraftDiff | None) -> dict:
    """The draft's diff as a preview lists it: its first fragments and edges, and how many more
    (a world book's draft may hold a hundred thousand)."""
    if diff is None:
        return {"diff": None, "fragments": []}
    listed, more = draft_diff_listed(diff)
    return {
        "diff": listed,
        "fragments": draft_preview_fragments(diff, limit=PREVIEW_LISTED),
        "draft_more": more,
    }


def proposal_card(request, proposal: ImportedProposal, *, back: str) -> dict:
    """A proposal as its card shows it: while it waits, what applying it would change now."""
    diff = wake_diff = None
    diff_error = changed_since = added_to = ""
    if proposal.state == ProposalState.PENDING:
        if proposal.kind == ProposalKind.DRAFT:
            try:
                draft = draft_parse(proposal.text)
                diff = draft_diff(draft, events_found=source_events)
                check = draft_check(draft, base=proposal.base)
                changed_since = check.as_text() if check.conflicts else ""
            except DraftError as error:
                diff_error = str(error)
        else:
            added_to = ADDED_TO[proposal.kind].what
            now = text_current(proposal.kind)
            wake_diff = _wake_diff(now, proposal.text, new_label="with the proposal")
            if proposal.base and proposal.base != now:
                changed_since = f"The {added_to} in use changed since this was proposed."
    return {
        "proposal": proposal,
        **_draft_listed(diff),
        "diff_error": diff_error,
        "changed_since": changed_since,
        "wake_diff": wake_diff,
        "added_to": added_to,
        "can_decide": proposal_may_decide(request.user, proposal),
        "back": back,
    }


def _wake_diff(now: str, section: str, *, new_label: str):
    """The wake text or the ambient prose, ``now``, beside it with ``section`` added, the long
    unchanged run said in one row."""
    return text_diff_html(
        now,
        text_added(now, section),
        old_label="in use now",
        new_label=new_label,
        context=WAKE_CONTEXT_LINES,
    )


def _back(request, default: str) -> HttpResponseRedirect:
    """Back to the page a button came from (this site's own), or ``default``."""
    target = request.POST.get("next", "")
    allowed = url_has_allowed_host_and_scheme(
        target, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    )
    return HttpResponseRedirect(target if allowed and target.startswith("/admin/") else default)


# --- Runs and the upload page ----------------------------------------------------------------


@admin.register(ImportRun)
class ImportRunAdmin(admin.ModelAdmin):
    list_display = ["file_name", "format", "started", "finished", "added"]
    list_filter = ["format", "started_at"]
    search_fields = ["file_name", "file_sha256"]

    @admin.display(description="started", ordering="started_at")
    def started(self, run):
        return when_short(run.started_at)

    @admin.display(description="finished", ordering="finished_at")
    def finished(self, run):
        return when_short(run.finished_at) if run.finished_at else run.get_status_display()

    @admin.display(description="added")
    def added(self, run):
        c = run.counts
        if not c:
            return "—"
        proposed = sum(c.get(n, 0) for n in ("drafts", "wakes", "prose_additions", "greetings"))
        return (
            f"{c.get('events', 0):,} messages, {c.get('suggestions', 0):,} memories, "
            f"{proposed} proposals"
        )

    def has_add_permission(self, request):
        return False  # a run is made by an import, from the upload page

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False

    def changelist_view(self, request, extra_context=None):
        extra_context = {**(extra_context or {}), "can_import": _can_import(request)}
        return super().changelist_view(request, extra_context)

    def get_urls(self):
        view = self.admin_site.admin_view
        return [
            path("upload/", view(self.upload_view), name="transfer-import-upload"),
            path("import/", view(require_POST(self.import_view)), name="transfer-import-run"),
            *super().get_urls(),
        ]

    def upload_view(self, request):
        """The form, then the preview of what importing the file would do: in the page for a
        small file, on its run's page once a worker has read it for a large one."""
        if not _can_import(request):
            raise PermissionDenied
        form = ImportUploadForm(request.POST or None, request.FILES or None)
        if request.method == "POST" and form.is_valid():
            upload, format = form.cleaned_data["file"], form.cleaned_data["format"]
            data = upload.read()
            if len(data) > settings.IMPORT_PREVIEW_IN_PAGE_BYTES:
                run = preview_enqueue(
                    sha256=file_keep(data),
                    format=format,
                    file_name=upload.name,
                    user=request.user,
                    task=PREVIEW_TASK,
                )
                return HttpResponseRedirect(
                    reverse("admin:transfer_importrun_change", args=[run.pk])
                )
            try:
                plan = bridge_plan(
                    bundle_read(format=format, data=data), file_name=upload.name, format=format
                )
            except BridgeError as error:
                form.add_error(
                    "file",
                    [f"“{upload.name}” was refused, nothing imported:", *str(error).splitlines()],
                )
            else:
                kept = KeptFileForm(
                    initial={
                        "sha256": file_keep(data),
                        "format": format,
                        "file_name": upload.name,
                    }
                )
                return self._preview(request, plan, kept, SpeakersForm(speakers=plan.speakers))
        return anvil_page(
            self, request, "admin/transfer/upload.html", "Import from another companion", form=form
        )

    def _preview(self, request, plan: BridgePlan, kept, speakers):
        ready = PreviewReady(
            html=preview_html(plan), speakers=plan.speakers, is_empty=plan.is_empty
        )
        return self._preview_page(request, plan.file_name, ready, speakers, kept=kept)

    def _preview_page(
        self,
        request,
        file_name: str,
        ready: PreviewReady,
        speakers: SpeakersForm,
        *,
        kept: KeptFileForm | PreviewedRunForm,
    ):
        """The preview page, drawn up in this request or by a worker, with its Import button
        (``kept`` names the file or the run it imports)."""
        return anvil_page(
            self,
            request,
            PREVIEW_TEMPLATE,
            f"Import {file_name}: what it would do",
            plan_html=mark_safe(ready.html),  # drawn up by the preview's own template
            is_empty=ready.is_empty,
            kept=kept,
            speakers_form=speakers,
            speaker_fields=[speakers[name] for name in speakers.fields],
        )

    def import_view(self, request):
        """Import the file the preview read, its speakers as chosen there."""
        if not _can_import(request):
            raise PermissionDenied
        if "run" in request.POST:
            return self._previewed_import(request)
        kept = KeptFileForm(request.POST)
        if not kept.is_valid():
            self.message_user(request, "Upload the file again to import it.", messages.ERROR)
            return HttpResponseRedirect(reverse("admin:transfer-import-upload"))
        file = kept.cleaned_data
        try:
            plan = kept_plan(**file)
        except BridgeError as error:
            self.message_user(request, f"Nothing imported: {error}", messages.ERROR)
            return HttpResponseRedirect(reverse("admin:transfer-import-upload"))
        speakers = SpeakersForm(request.POST, speakers=plan.speakers)
        if not speakers.is_valid():
            return self._preview(request, plan, kept, speakers)
        plan = bridge_plan(
            plan.bundle,
            file_name=file["file_name"],
            format=file["format"],
            speakers=speakers.mapping(),
        )
        try:
            run = import_enqueue(plan=plan, file_sha256=file["sha256"], user=request.user)
        except BridgeError as error:
            self.message_user(request, f"Nothing imported: {error}", messages.ERROR)
            return self._preview(request, plan, kept, speakers)
        return HttpResponseRedirect(reverse("admin:transfer_importrun_change", args=[run.pk]))

    def _previewed_import(self, request):
        """Import the file a worker previewed, its speakers as chosen on its run's page; the
        worker plans it again as it imports, so this request does not."""
        previewed = PreviewedRunForm(request.POST)
        if not previewed.is_valid():
            self.message_user(request, "Upload the file again to import it.", messages.ERROR)
            return HttpResponseRedirect(reverse("admin:transfer-import-upload"))
        run = get_object_or_404(ImportRun, pk=previewed.cleaned_data["run"])
        url = reverse("admin:transfer_importrun_change", args=[run.pk])
        if run.status != RunStatus.PREVIEWED:
            self.message_user(
                request, "This preview is not waiting to be imported.", messages.ERROR
            )
            return HttpResponseRedirect(url)
        ready = preview_ready(run)
        speakers = SpeakersForm(request.POST, speakers=ready.speakers)
        if not speakers.is_valid():
            return self._previewed_page(request, run, speakers)
        try:
            preview_import(run_id=run.pk, speakers=speakers.mapping(), user=request.user)
        except BridgeError as error:
            self.message_user(request, str(error), messages.ERROR)
        return HttpResponseRedirect(url)

    def _previewed_page(self, request, run: ImportRun, speakers: SpeakersForm | None = None):
        ready = preview_ready(run)
        return self._preview_page(
            request,
            run.file_name,
            ready,
            speakers or SpeakersForm(speakers=ready.speakers),
            kept=PreviewedRunForm(initial={"run": run.pk}),
        )

    def change_view(self, request, object_id, form_url="", extra_context=None):
        """A run's page: what it added, where to find it, and the proposals it staged. While it
        is under way its progress region polls this page: htmx gets that region alone, and the
        whole page once the run has ended."""
        if not self.has_view_permission(request):
            raise PermissionDenied
        run = get_object_or_404(ImportRun.objects.select_related("user"), pk=row_id(object_id))
        if request.htmx and run.under_way:
            return anvil_page(
                self,
                request,
                f"{RUN_TEMPLATE}#progress",
                f"Import of {run.file_name}",
                **_progress(run),
            )
        if request.htmx:
            response = HttpResponse(status=204)
            response["HX-Refresh"] = "true"
            return response
        if run.status == RunStatus.PREVIEWED:
            return self._previewed_page(request, run)
        back = request.path
        conversation = run_conversation(run)
        return anvil_page(
            self,
            request,
            RUN_TEMPLATE,
            f"Import of {run.file_name}",
            **_progress(run),
            counts=counts_said(run.counts),
            cards=[
                proposal_card(request, proposal, back=back)
                for proposal in run.proposals.select_related("decided_by")
            ],
            queue_url=reverse("admin:mirror_tagsuggestion_changelist")
            + f"?proposer__exact={Proposer.IMPORT}"
            if run.counts.get("suggestions") or run.counts.get("suggestions_here")
            else None,
            chat_url=reverse("heart-chat") + f"?before={conversation[1] + 1}"
            if conversation
            else None,
        )


def _progress(run: ImportRun) -> dict:
    """How far a run has come: the messages written or found, of all the file holds (or, while
    a worker reads it for its preview, the stage); the import a waiting run waits for."""
    counts = run.counts
    return {
        "run": run,
        "done": counts.get("events", 0) + counts.get("events_here", 0),
        "total": counts.get("messages", 0),
        "holder": import_holder(run) if run.status == RunStatus.WAITING else None,
        "finished_by": run_finished_by(run),
        "poll_seconds": POLL_SECONDS,
    }


def _can_import(request) -> bool:
    return request.user.has_perm(IMPORT_PERMISSION)


# --- Proposals -------------------------------------------------------------------------------


@admin.register(ImportedProposal)
class ImportedProposalAdmin(admin.ModelAdmin):
    list_display = ["title", "kind", "state", "run", "created"]
    list_filter = ["state", "kind"]
    search_fields = ["title", "text"]
    list_select_related = ["run"]

    @admin.display(description="proposed", ordering="created_at")
    def created(self, proposal):
        return when_short(proposal.created_at)

    def has_add_permission(self, request):
        return False  # an import stages proposals; a person decides on them

    def has_change_permission(self, request, obj=None):
        return False  # decided by its buttons, never edited as a row

    def has_delete_permission(self, request, obj=None):
        return False

    def get_urls(self):
        view = self.admin_site.admin_view
        return [
            path(
                "<int:proposal_id>/apply/",
                view(require_POST(self.apply_view)),
                name="transfer-proposal-apply",
            ),
            path("<int:proposal_id>/edit/", view(self.edit_view), name="transfer-proposal-edit"),
            path(
                "<int:proposal_id>/drop/",
                view(require_POST(self.drop_view)),
                name="transfer-proposal-drop",
            ),
            *super().get_urls(),
        ]

    def _page_url(self, proposal_id: int) -> str:
        return reverse("admin:transfer_importedproposal_change", args=[proposal_id])

    def _decidable(self, request, proposal_id: int) -> ImportedProposal:
        proposal = get_object_or_404(ImportedProposal, pk=proposal_id)
        if not proposal_may_decide(request.user, proposal):
            raise PermissionDenied
        return proposal

    def change_view(self, request, object_id, form_url="", extra_context=None):
        if not self.has_view_permission(request):
            raise PermissionDenied
        proposal = get_object_or_404(
            ImportedProposal.objects.select_related("run", "decided_by"), pk=row_id(object_id)
        )
        return anvil_page(
            self,
            request,
            "admin/transfer/proposal.html",
            proposal.title,
            **proposal_card(request, proposal, back=request.path),
        )

    def apply_view(self, request, proposal_id: int):
        """Apply a proposal as it came, or the text a person edited (``text``)."""
        proposal = self._decidable(request, proposal_id)
        form = ProposalEditForm(request.POST) if "text" in request.POST else None
        if form is not None and not form.is_valid():
            return self._edit_page(request, proposal, form)
        text = form.cleaned_data["text"] if form is not None else None
        try:
            applied = proposal_apply(
                proposal_id=proposal.pk,
                user=request.user,
                text=text,
                parts=draft_parts_chosen(request),
                against=request.POST.get("against", ""),
            )
        except DraftError as error:
            conflict = isinstance(error, DraftConflict | WakeConflict)
            if form is not None or conflict:
                # From the edit page, or written against what changed since: to the edit page,
                # which shows what changed.
                form = form or ProposalEditForm(initial={"text": proposal.text})
                return self._edit_page(
                    request, proposal, form, error="" if conflict else str(error)
                )
            self.message_user(request, f"Nothing applied: {error}", messages.ERROR)
        except ProposalError as error:
            self.message_user(request, str(error), messages.ERROR)
        else:
            self.message_user(request, _applied_said(applied))
        return _back(request, self._page_url(proposal.pk))

    def edit_view(self, request, proposal_id: int):
        """Edit a proposal's text, preview what it would change, then apply it."""
        proposal = self._decidable(request, proposal_id)
        form = ProposalEditForm(request.POST or None, initial={"text": proposal.text})
        return self._edit_page(request, proposal, form)

    def _edit_page(self, request, proposal, form, *, error: str = ""):
        text = form["text"].value() or "" if form.is_bound else proposal.text
        shown = not form.is_bound or form.is_valid()
        wake = proposal.kind != ProposalKind.DRAFT
        now = text_current(proposal.kind) if wake else ""
        return proposed_text_page(
            self,
            request,
            title=f"Edit {quoted(proposal.title)}",
            original=proposal,
            text=text,
            words=PROPOSAL_WORDS[proposal.kind],
            edit_url=reverse("admin:transfer-proposal-edit", args=[proposal.pk]),
            apply_url=reverse("admin:transfer-proposal-apply", args=[proposal.pk]),
            back=self._page_url(proposal.pk),
            error=error,
            text_errors=form.errors.get("text", []),
            wake_diff=_wake_diff(now, text, new_label="with the proposal")
            if wake and shown
            else None,
            base=proposal.base,
            wake_now=now,
        )

    def drop_view(self, request, proposal_id: int):
        proposal = self._decidable(request, proposal_id)
        try:
            proposal_drop(proposal_id=proposal.pk, user=request.user)
        except ProposalError as error:
            self.message_user(request, str(error), messages.ERROR)
        else:
            self.message_user(
                request, f"Dropped {quoted(proposal.title)}: nothing of it was written."
            )
        return _back(request, self._page_url(proposal.pk))


def _applied_said(applied) -> str:
    proposal = applied.proposal
    title = quoted(proposal.title)
    if proposal.kind in ADDED_TO:
        if applied.wake is None:
            what = ADDED_TO[proposal.kind].what
            return f"Applied {title}: the {what} in use held it already, nothing changed."
        # Its kind's name: "the wake context", "the ambient prose".
        what = proposal.get_kind_display()
        return f"Applied {title}: the {what} has a new version, {applied.wake}."
    changed = [*applied.diff.fragments_created, *applied.diff.fragments_changed()]
    if not changed:
        return f"Applied {title}: the Gem already held it, nothing changed."
    return f"Applied {title}: {', '.join(changed)} changed."
