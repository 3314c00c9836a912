"""Who may read and write the memory.

The owner (a superuser, made by ``manage.py ensure_owner``) may, and so may every account the
owner grants the permission "Can read and write the memory" (``gem.use_memory``) in the Anvil,
under Users. ``MemoryAccessMiddleware`` asks it of every view, the Anvil's included, after
Django's ``LoginRequiredMiddleware`` has sent anyone not signed in to sign in: a signed-in
account without the permission gets 403, whatever the method. A view added later is closed the
same way until it says otherwise. The views open to every account are those open to visitors
(``login_not_required``: signing in, the web app's manifest and service worker) and those marked
``memory_not_required`` (signing out, changing one's own password). The Anvil asks more on top,
as Django's admin does: staff status, and each model's own view, add, change and delete
permissions.
"""

from django.core.exceptions import PermissionDenied

MEMORY_PERMISSION = "gem.use_memory"
REFUSAL = (
    "This account may not read or write the memory. The owner can grant it "
    "“Can read and write the memory” in the Anvil, under Users."
)


def memory_not_required(view):
    """Mark ``view`` as open to every signed-in account, as ``login_not_required`` opens one to
    visitors."""
    view.memory_not_required = True
    return view


class MemoryAccessMiddleware:
    """403 for a signed-in account without the memory permission, on every view not marked
    open (see the module's docstring)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_view(self, request, view_func, view_args, view_kwargs):
        open_to_all = getattr(view_func, "login_not_required", False) or getattr(
            view_func, "memory_not_required", False
        )
        if open_to_all or not request.user.is_authenticated:
            return None
        if not request.user.has_perm(MEMORY_PERMISSION):
            raise PermissionDenied(REFUSAL)
        return None
