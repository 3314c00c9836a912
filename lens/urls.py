from django.urls import path

from lens import views

urlpatterns = [
    # Reading: a fragment, what connects several, working memory, summaries.
    path("", views.lens_index, name="lens-index"),
    path("fragments/<str:key>/", views.fragment_detail, name="lens-fragment-detail"),
    path("fragments/<str:key>/draft.md", views.fragment_draft, name="lens-fragment-draft"),
    path("connect/", views.intersection_detail, name="lens-intersection-detail"),
    path("wm/", views.working_memory_list, name="lens-wm-list"),
    path("summaries/", views.summary_list, name="lens-summary-list"),
    # Search and Mira's query.
    path("search/", views.search_page, name="lens-search-page"),
    path("query.json", views.query_json, name="lens-query-json"),
]
