"""``{% first_run_offer %}``: a short offer of the set-up while nothing has been said, or
nothing (the chat page and the Anvil's index show it)."""

from django import template

from heart.first_run import first_run_offered

register = template.Library()


@register.inclusion_tag("heart/_first_run_offer.html", takes_context=True)
def first_run_offer(context) -> dict:
    request = context.get("request")
    offered = request is not None and first_run_offered(request.session)
    return {"offered": offered, "request": request}
