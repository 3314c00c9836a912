"""The Lens in the browser, for the owner and the accounts granted the memory permission
(``gem.access.MemoryAccessMiddleware``; signed out: a redirect to the sign-in page). Thin views over
``lens/extract.py``, ``lens/search.py`` and ``lens/query.py``. They read and never write, so
every one is GET only."""

from urllib.parse import urlencode

from django.core.paginator import Paginator
from django.http import HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.html import escape
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_GET

from gem.draft import Draft, draft_render, draft_written
from lens.display import hits_display
from lens.extract import (
    LensError,
    fragment_drafts,
    fragments_listed,
    intersection,
    keys_checked,
    neighbours,
    summaries_recent,
    working_memory_lingering,
)
from lens.forms import KeysForm
from lens.query import QueryError, memory_query, query_from_params
from lens.search import DEFAULT_KINDS, MARK_OPEN, MAX_LIMIT, SearchError, search

SEARCH_PAGE_HITS = 10
INDEX_PAGE = 100  # fragments listed on a page of the Lens's index

# --- Reading: a fragment, what connects several, working memory, summaries ------------------


@require_GET
def lens_index(request):
    """The key box: one key opens the fragment, several what connects them."""
    if "keys" not in request.GET:
        page = Paginator(fragments_listed(), INDEX_PAGE).get_page(request.GET.get("page"))
        return render(request, "lens/index.html", {"form": KeysForm(), "fragments": page})
    form = KeysForm(request.GET)
    if not form.is_valid():
        return _refuse(request, form.first_error(), form=form, status=400)
    keys = form.cleaned_data["keys"]
    if len(keys) == 1:
        return redirect("lens-fragment-detail", key=keys[0])
    query = urlencode({"keys": " ".join(keys), "depth": form.cleaned_data["depth"]})
    return redirect(f"{reverse('lens-intersection-detail')}?{query}")


@require_GET
def fragment_detail(request, key: str):
    try:
        fragment = fragment_drafts(keys_checked([key]))[0]
    except LensError as error:
        return _refuse(request, str(error), status=404)
    return render(
        request,
        "lens/fragment.html",
        {
            "fragment": fragment,
            "neighbours": neighbours(fragment),
            "form": KeysForm(initial={"keys": key}),
        },
    )


@require_GET
def fragment_draft(request, key: str):
    """The fragment as a draft, to save and edit."""
    try:
        fragment = fragment_drafts(keys_checked([key]))[0]
    except LensError as error:
        return HttpResponse(str(error), status=404, content_type="text/plain; charset=utf-8")
    return HttpResponse(
        draft_render(draft_written(Draft(fragments=[fragment]))),
        content_type="text/markdown; charset=utf-8",
    )


@require_GET
def intersection_detail(request):
    form = KeysForm(request.GET)
    if not form.is_valid():
        return _refuse(request, form.first_error(), form=form, status=400)
    try:
        found = intersection(form.cleaned_data["keys"], depth=form.cleaned_data["depth"])
    except LensError as error:
        return _refuse(request, str(error), form=form, status=404)
    return render(request, "lens/intersection.html", {"found": found, "form": form})


@require_GET
def working_memory_list(request):
    turn, items = working_memory_lingering()
    return render(
        request, "lens/working_memory.html", {"turn": turn, "items": items, "form": KeysForm()}
    )


@require_GET
def summary_list(request):
    return render(
        request, "lens/summaries.html", {"summaries": summaries_recent(), "form": KeysForm()}
    )


def _refuse(request, reason: str, *, form: KeysForm | None = None, status: int):
    return render(
        request, "lens/index.html", {"form": form or KeysForm(), "error": reason}, status=status
    )


# --- Search and Mira's query ----------------------------------------------------------------


@require_GET
def search_page(request):
    """The best hits, a page at a time. A turn brought in by its neighbours alone is left out:
    it is shown among the turns around the hit it is beside."""
    query = request.GET.get("q", "").strip()
    asked = [kind for kind in request.GET.getlist("kind") if kind in DEFAULT_KINDS]
    kinds = asked or list(DEFAULT_KINDS)
    page, error = None, ""
    if query:
        try:
            hits = search(query, kinds=kinds, limit=MAX_LIMIT)
        except SearchError as failure:
            error = str(failure)
        else:
            found = [hit for hit in hits if not hit.beside]
            page = Paginator(found, SEARCH_PAGE_HITS).get_page(request.GET.get("page"))
    context = {
        "query": query,
        "kinds": kinds,
        "all_kinds": DEFAULT_KINDS,
        "page": page,
        "hits": [
            (shown, _marked(shown.passage))
            for shown in hits_display(page.object_list if page else [])
        ],
        "error": error,
    }
    template = "lens/search.html#results" if request.htmx else "lens/search.html"
    return render(request, template, context, status=400 if error else 200)


@require_GET
def query_json(request):
    try:
        results = memory_query(query_from_params(request.GET.dict()))
    except QueryError as error:
        return JsonResponse({"error": str(error)}, status=400)
    return JsonResponse({"count": len(results), "results": [r.as_json() for r in results]})


def _marked(snippet: str):
    """The snippet, escaped, with its **bold** matched words as <mark>."""
    parts = escape(snippet).split(MARK_OPEN)
    html = "".join(f"<mark>{part}</mark>" if n % 2 else part for n, part in enumerate(parts))
    return mark_safe(html)  # every part was escaped above
