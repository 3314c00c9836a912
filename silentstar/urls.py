from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_not_required
from django.templatetags.static import static
from django.urls import include, path, re_path
from django.views.generic import RedirectView

from gem.access import memory_not_required
from heart.auth import ThrottledLoginView

# The Anvil's pages register here, with the URLs, rather than when Django starts: a process
# that serves no page never imports them (anvil/apps.py).
admin.autodiscover()

urlpatterns = [
    # Browsers ask for /favicon.ico wherever a page names no icon: they get the site's icon.
    path(
        "favicon.ico",
        login_not_required(RedirectView.as_view(url=static("icons/icon.svg"), permanent=True)),
    ),
    # One sign-in page, with its limit on failed attempts; the admin's own sends people there.
    path("accounts/login/", ThrottledLoginView.as_view(), name="login"),
    # Signing out and changing one's own password are every account's, the memory's or not.
    path("accounts/logout/", memory_not_required(auth_views.LogoutView.as_view()), name="logout"),
    # Changing the password needs the old one and a signed-in session. There is no reset by
    # mail (no mail is set up): the owner resets it with `manage.py changepassword`.
    path(
        "accounts/password_change/",
        memory_not_required(auth_views.PasswordChangeView.as_view()),
        name="password_change",
    ),
    path(
        "accounts/password_change/done/",
        memory_not_required(auth_views.PasswordChangeDoneView.as_view()),
        name="password_change_done",
    ),
    path(
        "admin/login/",
        login_not_required(RedirectView.as_view(pattern_name="login", query_string=True)),
    ),
    # The event log and the turns moved from the Heart's app to their own: their old addresses
    # in the Anvil lead to the new ones, for those the Anvil lets in.
    re_path(
        r"^admin/heart/(?P<rest>(?:event|eventtag|turn)/.*)$",
        admin.site.admin_view(
            RedirectView.as_view(url="/admin/events/%(rest)s", permanent=True, query_string=True)
        ),
    ),
    path("admin/", admin.site.urls),
    path("lens/", include("lens.urls")),
    path("", include("heart.urls")),
]
