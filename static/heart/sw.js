/*
 * Silentstar service worker, served at /sw.js with scope "/".
 *
 * The shell (the chat page's CSS, scripts, vendored htmx and icons) comes from
 * the cache first; everything else (pages, /messages/, /turns/, /history/,
 * /worker/, /images/, the admin) always goes to the network and is never
 * cached. Change CACHE_VERSION whenever a shell file changes.
 */
"use strict";

const CACHE_VERSION = "silentstar-shell-v4";

const SHELL = [
  "/static/heart/chat.css",
  "/static/heart/chat.js",
  "/static/heart/space.js",
  "/static/vendor/htmx-2.0.8.min.js",
  "/static/icons/icon.svg",
  "/static/icons/icon-192.png",
  "/static/icons/icon-512.png",
  "/static/icons/icon-maskable-512.png",
];

const SHELL_PATHS = new Set(SHELL);

function cacheable(response) {
  return !!response && response.ok && response.status === 200 && response.type === "basic";
}

self.addEventListener("install", (event) => {
  event.waitUntil(
    caches
      .open(CACHE_VERSION)
      .then((cache) =>
        // One missing file must not keep the rest out of the cache.
        Promise.all(
          SHELL.map((url) =>
            fetch(url, { cache: "reload", credentials: "same-origin" })
              .then((response) => (cacheable(response) ? cache.put(url, response) : undefined))
              .catch(() => undefined)
          )
        )
      )
      .then(() => self.skipWaiting())
  );
});

self.addEventListener("activate", (event) => {
  event.waitUntil(
    caches
      .keys()
      .then((names) =>
        Promise.all(
          names
            .filter((name) => name.startsWith("silentstar-") && name !== CACHE_VERSION)
            .map((name) => caches.delete(name))
        )
      )
      .then(() => self.clients.claim())
  );
});

self.addEventListener("fetch", (event) => {
  const request = event.request;
  if (request.method !== "GET") return; // network, never cached
  const url = new URL(request.url);
  if (url.origin !== self.location.origin || !SHELL_PATHS.has(url.pathname)) return; // network

  event.respondWith(
    caches.open(CACHE_VERSION).then((cache) =>
      cache.match(url.pathname).then((cached) => {
        if (cached) return cached;
        return fetch(request).then((response) => {
          if (cacheable(response)) cache.put(url.pathname, response.clone());
          return response;
        });
      })
    )
  );
});

/*
 * A notification pushed when she writes first (heart/push.py): its JSON is {title, body, url,
 * tag}, the body empty unless the person chose to see her first words. A tap on it brings
 * the chat forward at her message, in a window already open if there is one.
 */
self.addEventListener("push", (event) => {
  let said = {};
  try {
    said = event.data ? event.data.json() : {};
  } catch (error) {
    said = {};
  }
  const title = said.title || "silentstar";
  event.waitUntil(
    self.registration.showNotification(title, {
      body: said.body || "A new message in silentstar.",
      tag: said.tag || "silentstar",
      icon: "/static/icons/icon-192.png",
      badge: "/static/icons/icon-192.png",
      data: { url: said.url || "/" },
    })
  );
});

function chatAt(url) {
  const target = new URL(url || "/", self.location.origin);
  // Only this installation's own pages: a notification never opens another site.
  return target.origin === self.location.origin ? target : new URL("/", self.location.origin);
}

self.addEventListener("notificationclick", (event) => {
  event.notification.close();
  const target = chatAt(event.notification.data && event.notification.data.url);
  event.waitUntil(
    self.clients.matchAll({ type: "window", includeUncontrolled: true }).then((windows) => {
      const chat = windows.find((client) => new URL(client.url).pathname === target.pathname);
      if (!chat) return self.clients.openWindow(target.href);
      // A window this worker does not control cannot be navigated: one is opened instead.
      return chat
        .focus()
        .then((client) => client.navigate(target.href))
        .catch(() => self.clients.openWindow(target.href));
    })
  );
});
