"""gunicorn's settings for the web service (deploy/systemd/silentstar-web.service).

gunicorn reads this file with ``--config``; WEB_CONCURRENCY and GUNICORN_BIND in the
environment file change the worker count and the address.
"""

import os

wsgi_app = "silentstar.wsgi:application"
bind = os.environ.get("GUNICORN_BIND", "127.0.0.1:8000")
# Requests are short (a turn runs in the worker; the page polls for the reply), and nginx
# buffers slow uploads, so plain synchronous workers do.
workers = int(os.environ.get("WEB_CONCURRENCY", "3"))
timeout = 30
graceful_timeout = 20
# Only the proxy on this machine may say which scheme and address a request came from.
forwarded_allow_ips = os.environ.get("GUNICORN_FORWARDED_ALLOW_IPS", "127.0.0.1,::1")
accesslog = "-"
errorlog = "-"
