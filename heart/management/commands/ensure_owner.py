from django.conf import settings
from django.core.management.base import BaseCommand

from heart.services import owner_ensure


class Command(BaseCommand):
    help = (
        "Create the owner account if it does not exist. The name comes from "
        "SILENTSTAR_OWNER_USERNAME, the password from SILENTSTAR_OWNER_PASSWORD; without one, "
        "a password is generated and printed once."
    )

    def handle(self, *args, **options):
        username = settings.OWNER_USERNAME
        password = settings.OWNER_PASSWORD or None
        generated = owner_ensure(username=username, password=password)
        if generated:
            self.stdout.write(
                self.style.SUCCESS(
                    f"Created the owner account '{username}' with the password: {generated}\n"
                    "It is shown only this once; change it in the admin under Users."
                )
            )
        elif password:
            self.stdout.write(
                f"Owner account '{username}' is ready (password from the environment)."
            )
        else:
            self.stdout.write(f"Owner account '{username}' already exists.")
