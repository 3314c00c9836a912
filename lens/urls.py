from django.urls import path

from lens import views

urlpatterns = [
    path("search/", views.search_page, name="lens-search-page"),
    path("query.json", views.query_json, name="lens-query-json"),
]
