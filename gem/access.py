"""Who may read and write the memory.

The owner (a superuser, made by ``manage.py ensure_owner``) may, and so may every account the
owner grants the permission "Can read and write the memory" (``gem.use_memory``) in the Anvil,
under Users. Every page of the chat, the Lens and the Anvil is wrapped in
``memory_access_required``: a signed-in account without the permission gets 403 on each, whatever
the method. The Anvil asks more on top, as Django's admin does: staff status, and each model's own
view, add, change and delete permissions.
"""

from functools import wraps

from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied

MEMORY_PERMISSION = "gem.use_memory"
REFUSAL = (
    "This account may not read or write the memory. The owner can grant it "
    "“Can read and write the memory” in the Anvil, under Users."
)


def memory_access_required(view):
    """``view``, for accounts with the memory permission; 403 for other signed-in accounts."""

    @wraps(view)
    def checked(request, *args, **kwargs):
        if not request.user.is_authenticated:
            return redirect_to_login(request.get_full_path())
        if not request.user.has_perm(MEMORY_PERMISSION):
            raise PermissionDenied(REFUSAL)
        return view(request, *args, **kwargs)

    return checked
