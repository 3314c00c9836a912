"""``python -m bench WHAT …``: Django set up with the project's settings, then ``bench.cli``."""

import os
import sys

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "silentstar.settings")
django.setup()

from bench.cli import main  # noqa: E402  (the models load only after setup)

sys.exit(main())
