"""Every request in the owner's time zone (``gem.zone.owner_time_zone``): the times the chat,
the Lens and the Anvil show, and the dates their forms read."""

from django.utils import timezone

from gem.zone import owner_time_zone


class OwnerTimeZoneMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        with timezone.override(owner_time_zone()):
            return self.get_response(request)
