/*
 * The notifications page: turns Web Push on for this device.
 *
 * It asks the browser's permission, subscribes through the service worker (/sw.js, scope "/",
 * the one the chat page registers) with the installation's public VAPID key, and posts the
 * subscription (its endpoint and keys) to the page's form action, which answers the devices'
 * list. The page says in words when it cannot: not a secure context, no push in this browser,
 * or notifications blocked.
 */
"use strict";

(() => {
  const form = document.getElementById("push-subscribe");
  const state = document.getElementById("push-state");
  if (!form || !state) return;
  const button = form.querySelector("button[type=submit]");
  const csrf = document.querySelector('meta[name="csrf-token"]').content;

  const BLOCKED =
    "Notifications are blocked for this site in this browser: allow them in its site " +
    "settings, then come back to this page.";

  function say(text) {
    state.textContent = text;
  }

  function cannot() {
    if (!window.isSecureContext) {
      return (
        "This page is not in a secure context (it was opened over plain HTTP), so the browser " +
        "will not let it receive notifications. Open it over HTTPS, or at localhost on the " +
        "computer that runs Silentstar."
      );
    }
    if (!("serviceWorker" in navigator) || !("PushManager" in window) || !("Notification" in window)) {
      return (
        "This browser cannot receive push notifications. On an iPhone or iPad, add the site " +
        "to the Home Screen and open it from there."
      );
    }
    if (Notification.permission === "denied") return BLOCKED;
    return "";
  }

  function keyBytes(base64url) {
    const base64 = base64url.replace(/-/g, "+").replace(/_/g, "/");
    const padded = base64 + "=".repeat((4 - (base64.length % 4)) % 4);
    return Uint8Array.from(atob(padded), (c) => c.charCodeAt(0));
  }

  function sameKey(buffer, bytes) {
    if (!buffer) return false;
    const given = new Uint8Array(buffer);
    return given.length === bytes.length && given.every((b, i) => b === bytes[i]);
  }

  async function registration() {
    await navigator.serviceWorker.register("/sw.js", { scope: "/" });
    return navigator.serviceWorker.ready;
  }

  async function subscription(key) {
    const pushManager = (await registration()).pushManager;
    const existing = await pushManager.getSubscription();
    if (existing && sameKey(existing.options && existing.options.applicationServerKey, key)) {
      return existing;
    }
    if (existing) await existing.unsubscribe(); // made with another key: it would be refused
    return pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: key });
  }

  async function turnOn(event) {
    event.preventDefault();
    button.disabled = true;
    say("Asking this browser…");
    try {
      const permission = await Notification.requestPermission();
      if (permission !== "granted") {
        say(permission === "denied" ? BLOCKED : "Notifications were not allowed: nothing changed.");
        return;
      }
      const made = (await subscription(keyBytes(form.dataset.key))).toJSON();
      const body = new URLSearchParams({
        endpoint: made.endpoint,
        p256dh: made.keys.p256dh,
        auth: made.keys.auth,
      });
      if (form.elements.show_words.checked) body.set("show_words", "on");
      const response = await fetch(form.action, {
        method: "POST",
        headers: { "X-CSRFToken": csrf },
        body,
        credentials: "same-origin",
      });
      document.getElementById("devices").outerHTML = await response.text();
      say(
        response.ok
          ? form.elements.show_words.checked
            ? "Notifications are on for this device, with the first words of her message."
            : "Notifications are on for this device: they say only who wrote."
          : "This device was not added: the reason is below."
      );
    } catch (error) {
      say(`Notifications could not be turned on: ${error.message || error}.`);
    } finally {
      button.disabled = false;
    }
  }

  const reason = cannot();
  if (reason) {
    say(reason);
    return;
  }
  form.hidden = false;
  form.addEventListener("submit", turnOn);
  say(
    Notification.permission === "granted"
      ? "This browser allows notifications from this site: turn them on to add this device, or again to change its choice of words."
      : "Notifications are off for this device. Your browser will ask whether to allow them."
  );
})();
