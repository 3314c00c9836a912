from django.contrib import admin
from django.urls import include, path
from django.views.generic import RedirectView

admin.site.site_header = "Silentstar — the Anvil"
admin.site.site_title = "Silentstar Anvil"
admin.site.index_title = "Curation"

urlpatterns = [
    path("", RedirectView.as_view(pattern_name="admin:index"), name="home"),
    path("accounts/", include("django.contrib.auth.urls")),
    path("admin/", admin.site.urls),
]
