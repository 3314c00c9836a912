from django.urls import path

from heart import views

urlpatterns = [
    path("", views.chat, name="heart-chat"),
    path("history/", views.history, name="heart-history"),
    path("messages/", views.message_send, name="heart-message-send"),
    path("turns/<int:turn_id>/", views.turn_detail, name="heart-turn-detail"),
    path("turns/<int:turn_id>/retry/", views.turn_retry_view, name="heart-turn-retry"),
    path("turns/<int:turn_id>/again/", views.turn_again_view, name="heart-turn-again"),
    path("turns/<int:turn_id>/choose/", views.reply_choose_view, name="heart-reply-choose"),
    path("events/<int:event_id>/correct/", views.event_correct, name="heart-event-correct"),
    path("events/<int:event_id>/purge/", views.event_purge_view, name="heart-event-purge"),
    path("setup/", views.setup, name="heart-setup"),
    path("setup/skip/", views.setup_skip, name="heart-setup-skip"),
    path("worker/", views.worker_status, name="heart-worker-status"),
    path("images/<int:event_id>/", views.image, name="heart-image"),
    path("notifications/", views.notifications, name="heart-notifications"),
    path(
        "notifications/subscribe/",
        views.notifications_subscribe,
        name="heart-notifications-subscribe",
    ),
    path("notifications/remove/", views.notifications_remove, name="heart-notifications-remove"),
    path("manifest.webmanifest", views.manifest, name="heart-manifest"),
    path("sw.js", views.service_worker, name="heart-service-worker"),
]
