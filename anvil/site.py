"""The Anvil's admin site: Django's own, with its index and menu leading with what a person
curates, and every page given the identities' colours.

It is the project's default admin site (``anvil.apps.AnvilAdminConfig``), so ``admin.site`` and
``@admin.register`` are this site, and every admin address stays what it was."""

from django.contrib import admin
from django.urls import path, reverse
from django.views.decorators.http import require_GET, require_POST

from anvil import drawer
from anvil.costs import VIEW_PERMISSION, costs_view
from anvil.inspector import inspector_view
from anvil.waiting import waiting_for
from anvil.why import why_view
from events.render import identity_colors
from gem.models import Identity

# What a person curates, in the order they come to it; a name here replaces the model's own.
CURATED = {
    "gem.Fragment": "Fragments",
    "gem.WorkingMemory": "Working memory",
    "mirror.TagSuggestion": "Suggestion queue",
    "compass.Consultation": "The Compass",
    "loom.Session": "Loom sessions",
    "loom.InboxImage": "Photo inbox",
    "gem.WakeText": "Wake texts",
    "gem.AmbientProse": "Ambient prose",
    "gem.Identity": "Identities",
}
# What imports from other companions wrote and proposed, beside the page that imports (shown
# to those who may import: anvil.bridges).
IMPORTS = ["transfer.ImportRun", "transfer.ImportedProposal"]
IMPORT_PERMISSION = "transfer.add_importrun"
# What was said, what the Mirror made of it, and the agents' prompts: read more than curated.
RECORDED = [
    "events.Event",
    "events.Turn",
    "events.Nudge",
    "heart.ContextSnapshot",
    "mirror.Summary",
    "mirror.MirrorRun",
    "mirror.MirrorPrompt",
    "compass.CompassPrompt",
    "loom.LoomPrompt",
]


def _group(name: str, label: str, models: list[dict]) -> dict:
    """A group of the index and the menu, shaped as the admin's templates read an app."""
    return {
        "name": name,
        "app_label": label,
        "app_url": "",  # a group has no page of its own
        "has_module_perms": True,
        "models": models,
    }


def _page_entry(name: str, url_name: str) -> dict:
    """A page of the Anvil's own, not a model's list, as an entry of the index and the menu
    (added only for those who may see it)."""
    return {
        "model": None,
        "name": name,
        "object_name": name.title().replace(" ", ""),
        "perms": {"view": True},
        "admin_url": reverse(url_name),
        "add_url": None,
        "view_only": True,
    }


class AnvilSite(admin.AdminSite):
    site_header = "Silentstar — the Anvil"
    site_title = "Silentstar Anvil"
    index_title = "Curation"
    empty_value_display = "—"

    def each_context(self, request):
        return {
            **super().each_context(request),
            "identity_colors": identity_colors(Identity.objects.values_list("name", "color")),
        }

    def index(self, request, extra_context=None):
        """The index leads with what waits for a person: suggestions, drafts, proposals."""
        return super().index(
            request, {"waiting": waiting_for(request.user), **(extra_context or {})}
        )

    def get_urls(self):
        return [
            path("costs/", self.admin_view(require_GET(self.costs_view)), name="costs"),
            path("why/", self.admin_view(require_GET(self.why_view)), name="why"),
            path("memory/", self.admin_view(require_GET(self.drawer_view)), name="drawer"),
            path(
                "memory/waiting/",
                self.admin_view(require_GET(self.drawer_badge_view)),
                name="drawer-badge",
            ),
            path(
                "memory/items/<int:item_id>/forget/",
                self.admin_view(require_POST(self.drawer_forget_view)),
                name="drawer-forget",
            ),
            path(
                "memory/items/<int:item_id>/edit/",
                self.admin_view(require_POST(self.drawer_edit_view)),
                name="drawer-edit",
            ),
            path(
                "memory/writing-first/",
                self.admin_view(require_POST(self.drawer_writing_first_view)),
                name="drawer-writing-first",
            ),
            path(
                "memory/suggestions/<int:suggestion_id>/decide/",
                self.admin_view(require_POST(self.drawer_decide_view)),
                name="drawer-decide",
            ),
            path(
                "events/turn/<int:turn_id>/context/",
                self.admin_view(require_GET(self.inspector_view)),
                name="inspector",
            ),
            *super().get_urls(),
        ]

    def costs_view(self, request):
        return costs_view(self, request)

    def inspector_view(self, request, turn_id: int):
        return inspector_view(self, request, turn_id=turn_id)

    def why_view(self, request):
        return why_view(self, request)

    def drawer_view(self, request):
        return drawer.drawer_view(self, request)

    def drawer_badge_view(self, request):
        return drawer.badge_view(self, request)

    def drawer_forget_view(self, request, item_id: int):
        return drawer.item_forget_view(self, request, item_id=item_id)

    def drawer_edit_view(self, request, item_id: int):
        return drawer.item_edit_view(self, request, item_id=item_id)

    def drawer_writing_first_view(self, request):
        return drawer.writing_first_view(self, request)

    def drawer_decide_view(self, request, suggestion_id: int):
        return drawer.suggestion_decide_view(self, request, suggestion_id=suggestion_id)

    def get_app_list(self, request, app_label=None):
        """An app's own page lists its models as the admin does; the index and the menu list
        four groups: what a person curates, what imports from other companions brought, the
        conversation and the Mirror's records, and the machinery (sign-in records, the task
        queue, link tables, accounts, the costs of the calls to Claude…) below."""
        if app_label is not None:
            return super().get_app_list(request, app_label)
        entries = {
            entry["model"]._meta.label: entry
            for app in super().get_app_list(request)
            for entry in app["models"]
        }
        curated = []
        for label, name in CURATED.items():
            if label in entries:
                curated.append({**entries.pop(label), "name": name})
            if label == "gem.Fragment" and curated and curated[-1]["admin_url"]:
                curated.append(_page_entry("Fragment graph", "admin:gem_fragment_graph"))
        imports = [entries.pop(label) for label in IMPORTS if label in entries]
        if request.user.has_perm(IMPORT_PERMISSION):
            imports.insert(
                0, _page_entry("Import from another companion", "admin:transfer-import-upload")
            )
        recorded = [entries.pop(label) for label in RECORDED if label in entries]
        machinery = list(entries.values())
        if request.user.has_perm(VIEW_PERMISSION):
            machinery.append(_page_entry("Costs", "admin:costs"))
        machinery.sort(key=lambda entry: entry["name"].casefold())
        groups = [
            _group("Memory to curate", "curation", curated),
            _group("From other companions", "imports", imports),
            _group("The conversation and the Mirror", "record", recorded),
            _group("Machinery", "machinery", machinery),
        ]
        return [group for group in groups if group["models"]]
