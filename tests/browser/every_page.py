"""Every page a person uses, for the tests that visit them all (axe, the console, a phone's
width): an installation lived in through its own services, and the addresses of its pages.

The data is made the way a person makes it (a turn answered by the offline companion, a Mirror
run, a Compass consultation, a Loom session with a call and a photo), so each page shows what it
shows in use rather than an empty list."""

from io import BytesIO

from django.contrib import admin
from django.contrib.admin.utils import quote
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import RequestFactory
from django.urls import reverse
from PIL import Image

from compass.services import consultation_ask
from gem.models import Fragment, FragmentEdge, Identity, WakeText, WorkingMemory
from heart.models import ContextSnapshot
from heart.services import turn_submit
from loom.services import inbox_add, loom_call_start, session_create, session_fragment_add
from mirror.run import mirror_run

LENS_PAGES = [
    "/lens/",
    "/lens/fragments/tea/",
    "/lens/connect/?keys=tea+cup",
    "/lens/wm/",
    "/lens/summaries/",
    "/lens/search/?q=tea",
]
SETUP_PAGE = "/setup/"


def a_lived_in_installation(owner: User) -> None:
    """Two people's turns answered, linked fragments, working memory with a plan, the Mirror's
    summaries and suggestions, a Compass consultation, a Loom session with a call and a photo
    in the inbox, and a second wake text to compare."""
    for name, side, color in [("luna", "user", "#c4a7e7"), ("claude", "companion", "#9ccfd8")]:
        Identity.objects.get_or_create(name=name, defaults={"side": side, "color": color})
    tea = Fragment.objects.create(key="tea", ambient="Green tea, no sugar, in the blue cup.")
    cup = Fragment.objects.create(key="cup", ambient="The blue cup with the chipped rim.")
    shelf = Fragment.objects.create(key="shelf", ambient="The kitchen shelf by the window.")
    FragmentEdge.objects.create(source=tea, target=cup, relation="served in")
    FragmentEdge.objects.create(source=cup, target=shelf, relation="kept on")
    for text in (
        "<pin>tea without sugar, in the blue cup</pin> I only drink it green",
        "I have physio on Thursday <plan>physio Thursday 10am</plan>",
    ):
        turn_submit(text=f"<luna>{text}</luna>", actor="luna")
    WorkingMemory.objects.create(
        type="feeling", content="restless before the appointment", subject="luna", actor="luna"
    )
    mirror_run(force=True)
    consultation_ask(question="What should luna plan for the week?", user=owner)
    session = session_create(topic="The kitchen shelf")
    session_fragment_add(session_id=session.pk, key="tea")
    loom_call_start(agent="weaver", fragment_key="tea", question="What goes with it?")
    picture = BytesIO()
    Image.new("RGB", (64, 48), "goldenrod").save(picture, format="JPEG")
    inbox_add(uploads=[(SimpleUploadedFile("shelf.jpg", picture.getvalue()), "jpg")])
    WakeText.objects.create(kind="wake", content="She wakes slowly, tea first.")
    WakeText.objects.create(kind="wake", content="She wakes slowly, green tea first.")


def anvil_pages(owner: User) -> list[str]:
    """The Anvil's index, its own pages, and for each model its list, its add form (when the
    owner may add one) and the change page of its first row (when it has one)."""
    asking = RequestFactory().get("/admin/")
    asking.user = owner
    snapshot = ContextSnapshot.objects.order_by("pk").first()
    pages = [
        reverse("admin:index"),
        reverse("admin:costs"),
        reverse("admin:why"),
        f"{reverse('admin:why')}?asked=tea",
        reverse("admin:gem_fragment_graph"),
        f"{reverse('admin:gem_fragment_graph')}?key=tea&depth=2",
        reverse("admin:transfer-import-upload"),
        f"{reverse('admin:gem_waketext_diff')}?new={WakeText.objects.order_by('pk').last().pk}",
    ]
    if snapshot is not None:
        pages.append(reverse("admin:inspector", args=[snapshot.turn]))
    for model, model_admin in admin.site._registry.items():
        name = f"admin:{model._meta.app_label}_{model._meta.model_name}"
        pages.append(reverse(f"{name}_changelist"))
        if model_admin.has_add_permission(asking):
            pages.append(reverse(f"{name}_add"))
        first = model._default_manager.first()
        if first is not None:
            pages.append(reverse(f"{name}_change", args=[quote(first.pk)]))
    return pages
