"""gunicorn's settings for the web service (deploy/systemd/silentstar-web.service).

gunicorn reads this file with ``--config``; WEB_CONCURRENCY and GUNICORN_BIND in the
environment file change the worker count and the address, SILENTSTAR_PAGE_TIMEOUT_SECONDS the
time a request may take.
"""

import os

wsgi_app = "silentstar.wsgi:application"
bind = os.environ.get("GUNICORN_BIND", "127.0.0.1:8000")
# Requests are short (a turn runs in the worker; the page polls for the reply), and nginx
# buffers slow uploads, so plain synchronous workers do.
workers = int(os.environ.get("WEB_CONCURRENCY", "3"))
# A request may take as long as a page may (SILENTSTAR_PAGE_TIMEOUT_SECONDS, the same default
# as silentstar/settings.py; nginx's proxy timeouts in deploy/nginx/silentstar.conf are equal):
# the import page previews a file of up to 4 MiB within the request.
timeout = int(os.environ.get("SILENTSTAR_PAGE_TIMEOUT_SECONDS", "").strip() or "300")
graceful_timeout = 20
# Only the proxy on this machine may say which scheme and address a request came from.
forwarded_allow_ips = os.environ.get("GUNICORN_FORWARDED_ALLOW_IPS", "127.0.0.1,::1")
accesslog = "-"
errorlog = "-"
