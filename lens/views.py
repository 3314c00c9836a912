"""The Lens in the browser for the signed-in owner: search, and Mira's query as JSON.

Thin views: read the parameters, call ``lens.search`` or ``lens.query``, render. Signing in is
required by ``LoginRequiredMiddleware`` (signed out: a redirect to the sign-in page).
"""

from django.http import JsonResponse
from django.shortcuts import render
from django.utils.html import escape
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_GET

from lens.query import QueryError, memory_query, query_from_params
from lens.search import KINDS, MARK_OPEN, SearchError, search


@require_GET
def search_page(request):
    query = request.GET.get("q", "").strip()
    kinds = [kind for kind in request.GET.getlist("kind") if kind in KINDS] or list(KINDS)
    hits, error = [], ""
    if query:
        try:
            hits = search(query, kinds=kinds, limit=25)
        except SearchError as failure:
            error = str(failure)
    context = {
        "query": query,
        "kinds": kinds,
        "all_kinds": KINDS,
        "hits": [(hit, _marked(hit.snippet)) for hit in hits],
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
