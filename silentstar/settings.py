"""Silentstar settings: every value comes from the environment (see README, .env.example)."""

from datetime import timedelta
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured
from django.utils.csp import CSP

from silentstar import pricing
from silentstar.env import (
    database_from_url,
    env_bool,
    env_float,
    env_hours,
    env_int,
    env_list,
    env_str,
    env_time_zone,
)
from silentstar.secret_key import secret_key_kept

BASE_DIR = Path(__file__).resolve().parent.parent
DATA_DIR = Path(env_str("SILENTSTAR_DATA_DIR", str(BASE_DIR / "data"))).resolve()

# Debug pages show code, settings and requests: only a person turns them on, on this machine.
DEBUG = env_bool("SILENTSTAR_DEBUG", False)
# Given, or generated once and kept in the data folder, which backups carry (secret_key.py).
SECRET_KEY = env_str("SILENTSTAR_SECRET_KEY", "") or secret_key_kept(DATA_DIR)
ALLOWED_HOSTS = env_list("SILENTSTAR_ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]"])
CSRF_TRUSTED_ORIGINS = env_list("SILENTSTAR_CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "anvil.apps.AnvilAdminConfig",  # Django's admin, with the Anvil's site (anvil/site.py)
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "django_htmx",
    "django_q",
    "axes",
    "events",
    "heart",
    "gem",
    "mirror",
    "lens",
    "ledger",
    "compass",
    "loom",
    "transfer",
    "anvil",
]

MIDDLEWARE = [
    "silentstar.errors.ErrorPagesMiddleware",  # first: a foreign Host gets the short 400
    "django.middleware.security.SecurityMiddleware",
    "django.middleware.csp.ContentSecurityPolicyMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "silentstar.disks.DiskTroubleMiddleware",  # a full disk or read-only data, said in words
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.auth.middleware.LoginRequiredMiddleware",
    "gem.access.MemoryAccessMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "heart.zone.OwnerTimeZoneMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "silentstar.urls"
WSGI_APPLICATION = "silentstar.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "django.template.context_processors.csp",
            ],
        },
    },
]

# --- Storage: the four stores of schema v5 -------------------------------------------
# Each store is its own SQLite file by default; with DATABASE_URL set they live in
# PostgreSQL, all in one database unless a store has its own URL.
STORE_ALIASES = ("default", "events", "summaries", "snapshots")
SQLITE_FILES = {
    "default": "silentstar.sqlite3",
    "events": "events.sqlite3",
    "summaries": "summaries.sqlite3",
    "snapshots": "snapshots.sqlite3",
}
SQLITE_BUSY_TIMEOUT_MS = env_int("SILENTSTAR_SQLITE_BUSY_TIMEOUT_MS", 5000, minimum=0)


def _sqlite_store(alias: str) -> dict:
    return {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": DATA_DIR / SQLITE_FILES[alias],
        "OPTIONS": {
            "init_command": (
                "PRAGMA journal_mode=WAL;"
                "PRAGMA synchronous=NORMAL;"
                f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS};"
            ),
            "transaction_mode": "IMMEDIATE",
            "timeout": SQLITE_BUSY_TIMEOUT_MS / 1000,
        },
    }


DATABASE_URL = env_str("DATABASE_URL", "")
DATABASES = {}
# Where each alias really lives: aliases with the same location share one database,
# and the router migrates a model wherever its home store physically is.
STORE_LOCATIONS = {}
for _alias in STORE_ALIASES:
    _url_name = "DATABASE_URL" if _alias == "default" else f"{_alias.upper()}_DATABASE_URL"
    _url = env_str(_url_name, DATABASE_URL)
    if _url:
        DATABASES[_alias] = database_from_url(_url_name, _url)
        DATABASES[_alias]["CONN_MAX_AGE"] = env_int("SILENTSTAR_CONN_MAX_AGE", 60, minimum=0)
        DATABASES[_alias]["CONN_HEALTH_CHECKS"] = True
        _db = DATABASES[_alias]
        STORE_LOCATIONS[_alias] = f"postgresql://{_db['HOST']}:{_db['PORT']}/{_db['NAME']}"
    else:
        DATA_DIR.mkdir(parents=True, exist_ok=True)
        DATABASES[_alias] = _sqlite_store(_alias)
        STORE_LOCATIONS[_alias] = f"sqlite:{DATABASES[_alias]['NAME']}"

DATABASE_ROUTERS = ["silentstar.router.StoreRouter"]
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- Auth ------------------------------------------------------------------------------
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "login"
OWNER_USERNAME = env_str("SILENTSTAR_OWNER_USERNAME", "owner")
OWNER_PASSWORD = env_str("SILENTSTAR_OWNER_PASSWORD", "")
# The sign-in limit (heart/auth.py, django-axes): failures are counted in the default store, per
# user name and client address together, and per address whatever the names; either reaching its
# limit refuses further attempts from that address (429; for that name only, or for every name)
# until the window has passed since the last. A success clears its name's count at its address.
AUTHENTICATION_BACKENDS = [
    "heart.auth.SignInLimitBackend",
    "django.contrib.auth.backends.ModelBackend",
]
LOGIN_BEHIND_PROXY = env_bool("SILENTSTAR_BEHIND_PROXY", False)
AXES_HANDLER = "heart.auth.SignInLimitHandler"
AXES_FAILURE_LIMIT = env_int("SILENTSTAR_LOGIN_FAILURE_LIMIT", 5, minimum=1)
LOGIN_ADDRESS_FAILURE_LIMIT = env_int("SILENTSTAR_LOGIN_ADDRESS_FAILURE_LIMIT", 20, minimum=1)
AXES_COOLOFF_TIME = timedelta(
    minutes=env_int("SILENTSTAR_LOGIN_FAILURE_WINDOW_MINUTES", 15, minimum=1)
)
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_CLIENT_IP_CALLABLE = "heart.auth.client_address"
AXES_LOCKOUT_CALLABLE = "heart.auth.lockout_response"
AXES_DISABLE_ACCESS_LOG = True

# --- HTTPS and cookies (production) ----------------------------------------------------
HTTPS = env_bool("SILENTSTAR_HTTPS", False)
# Debug off over plain HTTP is refused at start-up (silentstar/checks.py) unless this is on or
# every allowed host is this machine's own (localhost, 127.0.0.1, [::1]).
ALLOW_PLAIN_HTTP = env_bool("SILENTSTAR_ALLOW_PLAIN_HTTP", False)
SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SAMESITE = "Lax"
CSRF_COOKIE_SAMESITE = "Lax"
SESSION_COOKIE_SECURE = HTTPS
CSRF_COOKIE_SECURE = HTTPS
SECURE_SSL_REDIRECT = HTTPS
SECURE_HSTS_SECONDS = env_int("SILENTSTAR_HSTS_SECONDS", 31536000 if HTTPS else 0, minimum=0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = HTTPS
SECURE_HSTS_PRELOAD = HTTPS
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
# Whatever DEBUG says, an error's report masks connection strings and passwords (errors.py).
DEFAULT_EXCEPTION_REPORTER_FILTER = "silentstar.errors.SecretsFilter"
X_FRAME_OPTIONS = "DENY"
# Content-Security-Policy: scripts, styles, fetches and pictures from this origin only (images
# also from data: and blob: URLs, the chat's previews). No inline script anywhere; an inline
# <style> needs the request's nonce (the chat page's identity colours, the admin's own), and
# style="" attributes are refused. docs/deployment.md says what a page must do to fit.
SECURE_CSP = {
    "default-src": [CSP.SELF],
    "script-src": [CSP.SELF],
    "style-src": [CSP.SELF, CSP.NONCE],
    "img-src": [CSP.SELF, "data:", "blob:"],
    "connect-src": [CSP.SELF],
    "object-src": [CSP.NONE],
    "base-uri": [CSP.SELF],
    "frame-ancestors": [CSP.NONE],
    "form-action": [CSP.SELF],
}
if env_bool("SILENTSTAR_BEHIND_PROXY", False):
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")

# --- Time -------------------------------------------------------------------------------
LANGUAGE_CODE = "en-gb"
TIME_ZONE = env_time_zone("SILENTSTAR_TIME_ZONE", "UTC")
USE_I18N = True
USE_TZ = True
# One format for every moment a person reads (silentstar/formats/en/formats.py).
FORMAT_MODULE_PATH = ["silentstar.formats"]

# --- Static and uploaded files -----------------------------------------------------------
STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = BASE_DIR / "staticfiles"
MEDIA_URL = "media/"
MEDIA_ROOT = DATA_DIR / "media"
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}
# Serve straight from the source folders so the app runs without a collectstatic step.
WHITENOISE_USE_FINDERS = True
STATIC_ROOT.mkdir(exist_ok=True)  # whitenoise warns on every start while it is missing

# --- Background work (django-q2) ----------------------------------------------------------
REDIS_URL = env_str("REDIS_URL", "")
Q_TIMEOUT = env_int("SILENTSTAR_Q_TIMEOUT", 900, minimum=1)
Q_RETRY = env_int("SILENTSTAR_Q_RETRY", 960, minimum=2)
if Q_RETRY <= Q_TIMEOUT:
    raise ImproperlyConfigured(
        f"SILENTSTAR_Q_RETRY ({Q_RETRY}) must be larger than SILENTSTAR_Q_TIMEOUT ({Q_TIMEOUT}), "
        "or a task still running would be handed to a second worker"
    )
Q_CLUSTER = {
    "name": "silentstar",
    "workers": env_int("SILENTSTAR_Q_WORKERS", 2, minimum=1),
    "timeout": Q_TIMEOUT,
    "retry": Q_RETRY,
    "max_attempts": env_int("SILENTSTAR_Q_MAX_ATTEMPTS", 3, minimum=1),
    # The ORM broker polls: 0.05 s keeps pickup around 40 ms on SQLite.
    "poll": env_float("SILENTSTAR_Q_POLL", 0.05, minimum=0.01),
    "catch_up": False,
    "ack_failures": True,
    "save_limit": 1000,
    "label": "Background tasks",
    "sync": env_bool("SILENTSTAR_Q_SYNC", False),
}
if REDIS_URL:
    Q_CLUSTER["redis"] = REDIS_URL
else:
    Q_CLUSTER["orm"] = "default"
# A running turn whose worker gave no sign of life (its claim, a streamed save) for this long
# is put back in the queue; a turn left queued this long gets a worker again.
TURN_STALE_SECONDS = env_int("SILENTSTAR_TURN_STALE_SECONDS", 60, minimum=5)

# --- Logging ---------------------------------------------------------------------------------
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": env_str("SILENTSTAR_LOG_LEVEL", "INFO")},
    "loggers": {
        "django_q": {"level": env_str("SILENTSTAR_Q_LOG_LEVEL", "WARNING")},
        "axes": {"level": "WARNING"},  # failures and lockouts, not every step of each
    },
}

# --- The companion (Claude) ----------------------------------------------------------------
# Without an API key, a local model server speaking the Messages API answers when
# SILENTSTAR_LOCAL_BASE_URL is set (below, and docs/local-model.md); without either, an offline
# companion answers, so the whole loop works on a laptop.
# ANTHROPIC_BASE_URL is read by the SDK itself: any endpoint speaking the Messages API works.
ANTHROPIC_API_KEY = env_str("ANTHROPIC_API_KEY", "")
LOCAL_BASE_URL = env_str("SILENTSTAR_LOCAL_BASE_URL", "")
LOCAL_SERVER = bool(LOCAL_BASE_URL) and not ANTHROPIC_API_KEY  # the calls go to the local server
COMPANION_OFFLINE = not ANTHROPIC_API_KEY and not LOCAL_SERVER
HEART_MODEL = env_str("SILENTSTAR_HEART_MODEL", "claude-opus-5-5")
HEART_MAX_TOKENS = env_int("SILENTSTAR_HEART_MAX_TOKENS", 4096, minimum=1)
# While a conversation pauses, read the prompt cache a few times so it outlives its 5 minutes.
CACHE_KEEP_WARM = env_bool("SILENTSTAR_CACHE_KEEP_WARM", False)
CACHE_KEEP_WARM_TIMES = env_int("SILENTSTAR_CACHE_KEEP_WARM_TIMES", 3, minimum=1)
CLAUDE_TIMEOUT_SECONDS = env_float("SILENTSTAR_CLAUDE_TIMEOUT", 120.0, minimum=1.0)
CLAUDE_MAX_RETRIES = env_int("SILENTSTAR_CLAUDE_MAX_RETRIES", 4, minimum=0)
if Q_TIMEOUT <= CLAUDE_TIMEOUT_SECONDS * (CLAUDE_MAX_RETRIES + 1):
    raise ImproperlyConfigured(
        f"SILENTSTAR_Q_TIMEOUT ({Q_TIMEOUT}) must be longer than SILENTSTAR_CLAUDE_TIMEOUT "
        f"({CLAUDE_TIMEOUT_SECONDS:g}) times its {CLAUDE_MAX_RETRIES + 1} attempts, or a turn "
        "still waiting on Claude would be cut off by the worker"
    )

# What each model costs (US dollars per million tokens) and the smallest prefix its prompt cache
# keeps: silentstar/pricing.py's tables, with these JSON objects laid over them (docs/costs.md).
try:
    MODEL_PRICES = pricing.prices_laid_over(
        pricing.PRICES, env_str("SILENTSTAR_MODEL_PRICES", "{}")
    )
except ValueError as error:
    raise ImproperlyConfigured(f"SILENTSTAR_MODEL_PRICES: {error}") from None
try:
    CACHE_MINIMUM_TOKENS = pricing.minimums_laid_over(
        pricing.CACHE_MINIMUM_TOKENS, env_str("SILENTSTAR_CACHE_MINIMUM_TOKENS", "{}")
    )
except ValueError as error:
    raise ImproperlyConfigured(f"SILENTSTAR_CACHE_MINIMUM_TOKENS: {error}") from None

# --- The Mirror: scheduled compression into summaries --------------------------------------
# One model per pass role: clean (fastest), compress (middle), summarise and tag (strongest;
# merges of summaries use it too). Defaults: the newest of each the installed SDK lists.
MIRROR_CLEAN_MODEL = env_str("SILENTSTAR_MIRROR_CLEAN_MODEL", "claude-haiku-5-5")
MIRROR_COMPRESS_MODEL = env_str("SILENTSTAR_MIRROR_COMPRESS_MODEL", "claude-sonnet-5-5")
MIRROR_SUMMARISE_MODEL = env_str("SILENTSTAR_MIRROR_SUMMARISE_MODEL", "claude-opus-5-5")
MIRROR_MAX_TOKENS = env_int("SILENTSTAR_MIRROR_MAX_TOKENS", 4096, minimum=1)
MIRROR_CHUNK_TURNS = env_int("SILENTSTAR_MIRROR_CHUNK_TURNS", 20, minimum=1)
MIRROR_CONTEXT_TURNS = env_int("SILENTSTAR_MIRROR_CONTEXT_TURNS", 5, minimum=0)
MIRROR_SUGGESTION_CAP = env_int("SILENTSTAR_MIRROR_SUGGESTION_CAP", 2, minimum=0)
MIRROR_CHECK_MINUTES = env_int("SILENTSTAR_MIRROR_CHECK_MINUTES", 10, minimum=1)
MIRROR_HISTORY_MARKERS = env_bool("SILENTSTAR_MIRROR_HISTORY_MARKERS", False)

# --- The Compass and the Loom: agents that propose, for a person to decide ------------------
# The Compass (a planning agent consulted in the Anvil, and on its own every
# SILENTSTAR_COMPASS_REVIEW_DAYS days; 0: never) and the Loom's three facet agents. The web search
# tool is offered to the Compass and the Researcher only when SILENTSTAR_WEB_SEARCH allows it.
COMPASS_MODEL = env_str("SILENTSTAR_COMPASS_MODEL", "claude-opus-5-5")
COMPASS_REVIEW_DAYS = env_int("SILENTSTAR_COMPASS_REVIEW_DAYS", 7, minimum=0)
LOOM_MODEL = env_str("SILENTSTAR_LOOM_MODEL", "claude-sonnet-5-5")
AGENT_MAX_TOKENS = env_int("SILENTSTAR_AGENT_MAX_TOKENS", 8192, minimum=1)
WEB_SEARCH = env_bool("SILENTSTAR_WEB_SEARCH", False)
WEB_SEARCH_MAX_USES = env_int("SILENTSTAR_WEB_SEARCH_MAX_USES", 5, minimum=1)

# --- Writing first (heart/nudges.py, docs/nudges.md) -------------------------------------------
# The companion may write first only for the reasons the person turned on (each off at first),
# never in the quiet hours (the owner's time zone), at most SILENTSTAR_NUDGE_DAILY_MAX times a day,
# never while a reply waits or within SILENTSTAR_NUDGE_AFTER_MESSAGE_MINUTES of the person's last
# message, and not again after SILENTSTAR_NUDGE_UNANSWERED_MAX nudges in a row went unanswered.
NUDGE_CHECK_MINUTES = env_int("SILENTSTAR_NUDGE_CHECK_MINUTES", 10, minimum=1)
NUDGE_QUIET_HOURS = env_hours("SILENTSTAR_NUDGE_QUIET_HOURS", "22:00-09:00")
NUDGE_DAILY_MAX = env_int("SILENTSTAR_NUDGE_DAILY_MAX", 1, minimum=0)
NUDGE_UNANSWERED_MAX = env_int("SILENTSTAR_NUDGE_UNANSWERED_MAX", 2, minimum=1)
NUDGE_AFTER_MESSAGE_MINUTES = env_int("SILENTSTAR_NUDGE_AFTER_MESSAGE_MINUTES", 60, minimum=0)
NUDGE_SILENCE_DAYS = env_int("SILENTSTAR_NUDGE_SILENCE_DAYS", 3, minimum=1)
NUDGE_PROPOSALS_AFTER_HOURS = env_int("SILENTSTAR_NUDGE_PROPOSALS_AFTER_HOURS", 24, minimum=1)

# --- A local model server (docs/local-model.md) ----------------------------------------------
# Used when SILENTSTAR_LOCAL_BASE_URL is set and ANTHROPIC_API_KEY is not: one model for every
# role (SILENTSTAR_LOCAL_MODEL), or one per role, and the models above are not called. Its calls
# cost nothing in the ledger. It takes no prompt-cache markers unless told it does.
LOCAL_API_KEY = env_str("SILENTSTAR_LOCAL_API_KEY", "local")  # a placeholder the SDK sends
LOCAL_MODEL = env_str("SILENTSTAR_LOCAL_MODEL", "")
LOCAL_ROLE_MODELS = {
    role: env_str(f"SILENTSTAR_LOCAL_{role}_MODEL", "") or LOCAL_MODEL
    for role in ("HEART", "MIRROR", "COMPASS", "LOOM")
}
LOCAL_CACHE_MARKERS = env_bool("SILENTSTAR_LOCAL_CACHE_MARKERS", False)
if LOCAL_SERVER:
    unnamed = [role for role, model in LOCAL_ROLE_MODELS.items() if not model]
    if unnamed:
        raise ImproperlyConfigured(
            "SILENTSTAR_LOCAL_BASE_URL is set, so SILENTSTAR_LOCAL_MODEL must name the local "
            "model (or SILENTSTAR_LOCAL_<ROLE>_MODEL one for each role); no model is named for "
            + ", ".join(f"SILENTSTAR_LOCAL_{role}_MODEL" for role in unnamed)
        )
    HEART_MODEL = LOCAL_ROLE_MODELS["HEART"]
    MIRROR_CLEAN_MODEL = LOCAL_ROLE_MODELS["MIRROR"]
    MIRROR_COMPRESS_MODEL = MIRROR_SUMMARISE_MODEL = MIRROR_CLEAN_MODEL
    COMPASS_MODEL = LOCAL_ROLE_MODELS["COMPASS"]
    LOOM_MODEL = LOCAL_ROLE_MODELS["LOOM"]

# --- The Lens: the optional semantic half of event search (lens/semantic.py) ----------------
SEARCH_SEMANTIC = env_bool("SILENTSTAR_SEARCH_SEMANTIC", False)
SEARCH_SEMANTIC_MODEL = env_str("SILENTSTAR_SEARCH_SEMANTIC_MODEL", "")
SEARCH_SEMANTIC_WINDOW = env_int("SILENTSTAR_SEARCH_SEMANTIC_WINDOW", 20_000, minimum=1)

# --- What Claude wakes up to: budgets in tokens (estimated as characters / 4) ----------------
BUDGET_WORKING_MEMORY = env_int("SILENTSTAR_BUDGET_WORKING_MEMORY", 1500, minimum=0)
BUDGET_RECALL = env_int("SILENTSTAR_BUDGET_RECALL", 1000, minimum=0)
BUDGET_FOUND = env_int("SILENTSTAR_BUDGET_FOUND", 1500, minimum=0)
BUDGET_SUMMARIES = env_int("SILENTSTAR_BUDGET_SUMMARIES", 800, minimum=0)
BUDGET_POOL_USER = env_int("SILENTSTAR_BUDGET_POOL_USER", 1200, minimum=0)
BUDGET_POOL_SAY = env_int("SILENTSTAR_BUDGET_POOL_SAY", 1200, minimum=0)
BUDGET_POOL_DO = env_int("SILENTSTAR_BUDGET_POOL_DO", 500, minimum=0)
BUDGET_POOL_FLEX = env_int("SILENTSTAR_BUDGET_POOL_FLEX", 600, minimum=0)
# The most one tier of a fragment may hold: the Anvil, drafts and imports refuse a tier past it
# (a tier past the recall budget is saved with a warning: only part of it can reach her).
FRAGMENT_TIER_MAX_TOKENS = env_int("SILENTSTAR_FRAGMENT_TIER_MAX_TOKENS", 4000, minimum=1)
# The strength of the decay pressure (gem/decay.py): 0 turns it off.
DECAY_PRESSURE = env_float("SILENTSTAR_DECAY_PRESSURE", 0.0, minimum=0.0)
SNAPSHOT_RETENTION_DAYS = env_int("SILENTSTAR_SNAPSHOT_RETENTION_DAYS", 30, minimum=1)

# --- The archive of working memory no longer active (gem/archive.py, docs/archive.md) ----------
# Its files go through a storage of their own; capacity is the bytes working memory would take
# as archive lines, and the thresholds are fractions of it (seed 003: 10 MB, 80 %, 95 %, 100 %,
# hard pruning down to 70 %).
STORAGES["archive"] = {
    "BACKEND": "django.core.files.storage.FileSystemStorage",
    "OPTIONS": {"location": env_str("SILENTSTAR_ARCHIVE_DIR", str(DATA_DIR / "archive"))},
}
ARCHIVE_AFTER_DAYS = env_int("SILENTSTAR_ARCHIVE_AFTER_DAYS", 90, minimum=1)
ARCHIVE_CAPACITY_BYTES = env_int("SILENTSTAR_ARCHIVE_CAPACITY_BYTES", 10_000_000, minimum=1)
ARCHIVE_HARD_TARGET = env_float("SILENTSTAR_ARCHIVE_HARD_TARGET", 0.7, minimum=0.0)
ARCHIVE_SOFT = env_float("SILENTSTAR_ARCHIVE_SOFT", 0.8, minimum=0.0)
ARCHIVE_HARD = env_float("SILENTSTAR_ARCHIVE_HARD", 0.95, minimum=0.0)
ARCHIVE_EMERGENCY = env_float("SILENTSTAR_ARCHIVE_EMERGENCY", 1.0, minimum=0.0)
if not (ARCHIVE_HARD_TARGET < ARCHIVE_HARD and ARCHIVE_SOFT <= ARCHIVE_HARD <= ARCHIVE_EMERGENCY):
    raise ImproperlyConfigured(
        "The archive's thresholds must rise: SILENTSTAR_ARCHIVE_HARD_TARGET "
        f"({ARCHIVE_HARD_TARGET:g}) < SILENTSTAR_ARCHIVE_HARD ({ARCHIVE_HARD:g}), and "
        f"SILENTSTAR_ARCHIVE_SOFT ({ARCHIVE_SOFT:g}) <= SILENTSTAR_ARCHIVE_HARD <= "
        f"SILENTSTAR_ARCHIVE_EMERGENCY ({ARCHIVE_EMERGENCY:g})"
    )

# --- Chat page ---------------------------------------------------------------------------------
# A cache every process shares: django-q2's database broker keeps its cluster status there,
# which the page's worker dot reads.
if REDIS_URL:
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": REDIS_URL,
            "KEY_PREFIX": "silentstar",
        }
    }
else:
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.filebased.FileBasedCache",
            "LOCATION": DATA_DIR / "cache",
        }
    }
# Uploaded images: the byte limit is capped at what the Messages API accepts (3,932,160).
IMAGE_MAX_BYTES = env_int("SILENTSTAR_IMAGE_MAX_BYTES", 3_932_160, minimum=1)
IMAGE_MAX_PIXELS = env_int("SILENTSTAR_IMAGE_MAX_PIXELS", 50_000_000, minimum=1)
# A Lens draft applied in the Anvil, uploaded or pasted.
DRAFT_MAX_BYTES = env_int("SILENTSTAR_DRAFT_MAX_BYTES", 2 * 2**20, minimum=1)
# No uploaded file is kept past its form field's limit (silentstar/uploads.py); the other
# fields of a post hold at most a pasted draft and a little more.
# Another companion's file for the Anvil's import page (transfer.bridges): a long chat runs to
# tens of megabytes.
IMPORT_MAX_BYTES = env_int("SILENTSTAR_IMPORT_MAX_BYTES", 100 * 2**20, minimum=1)
UPLOAD_MAX_BYTES = {"image": IMAGE_MAX_BYTES, "upload": DRAFT_MAX_BYTES, "file": IMPORT_MAX_BYTES}
# A larger file's preview is read by the worker, its progress followed on the run's page.
IMPORT_PREVIEW_IN_PAGE_BYTES = env_int(
    "SILENTSTAR_IMPORT_PREVIEW_IN_PAGE_BYTES", 4 * 2**20, minimum=0
)
# A running import whose worker gave no sign of life (its claim, a batch written) for this long
# is marked stopped part-way; importing the same file again finishes it.
IMPORT_STALE_SECONDS = env_int("SILENTSTAR_IMPORT_STALE_SECONDS", 120, minimum=5)
FILE_UPLOAD_HANDLERS = [
    "silentstar.uploads.LimitedUploadHandler",
    "django.core.files.uploadhandler.MemoryFileUploadHandler",
    "django.core.files.uploadhandler.TemporaryFileUploadHandler",
]
DATA_UPLOAD_MAX_MEMORY_SIZE = DRAFT_MAX_BYTES + 2**20
# The longest a page request may take, in seconds: gunicorn's timeout (deploy/gunicorn.conf.py
# reads this variable) and nginx's proxy timeouts (deploy/nginx/silentstar.conf, kept equal by
# hand) are this value, so the page is never cut by one of them before the others.
PAGE_TIMEOUT_SECONDS = env_int("SILENTSTAR_PAGE_TIMEOUT_SECONDS", 300, minimum=1)

# --- The Loom's photo inbox ------------------------------------------------------------------
# The most photos waiting in the inbox; an upload past it is refused in words (loom.services).
LOOM_INBOX_MAX_PHOTOS = env_int("SILENTSTAR_LOOM_INBOX_MAX_PHOTOS", 200, minimum=1)

# --- A full disk (silentstar/disks.py) ---------------------------------------------------------
# manage.py check warns when the disk holding the data folder has less free than this (0: never).
DISK_FREE_MIN_MB = env_int("SILENTSTAR_DISK_FREE_MIN_MB", 100, minimum=0)

# --- Notifications on the devices that opted in (heart/push.py, docs/nudges.md) --------------
# The contact the push services are given with each push (VAPID's "sub": a mailto: or https:
# address), so they can reach whoever runs the installation; the default reaches nobody.
PUSH_CONTACT = env_str("SILENTSTAR_PUSH_CONTACT", "mailto:nobody@silentstar.invalid")
if not PUSH_CONTACT.startswith(("mailto:", "https://")):
    raise ImproperlyConfigured(
        f"SILENTSTAR_PUSH_CONTACT must be a mailto: or https: address, not {PUSH_CONTACT!r}"
    )
# How long a push service keeps a notification for a device that is off before dropping it.
PUSH_TTL_HOURS = env_int("SILENTSTAR_PUSH_TTL_HOURS", 24, minimum=0)
# How many times a notification is tried before it is marked failed (gone devices are removed).
PUSH_ATTEMPTS = env_int("SILENTSTAR_PUSH_ATTEMPTS", 3, minimum=1)
# The push services a device's subscription may name (a host, or a domain and its hosts): the
# browsers' own. Nothing else is ever posted to.
PUSH_SERVICES = env_list(
    "SILENTSTAR_PUSH_SERVICES",
    [
        "fcm.googleapis.com",
        "updates.push.services.mozilla.com",
        "notify.windows.com",
        "push.apple.com",
    ],
)
