/*
 * The memory drawer on the chat page: the "memory" link opens a panel and loads the Anvil's
 * drawer into it with htmx (templates/anvil/drawer.html); its forms answer with the drawer
 * again. Close with its button, Escape or the link. Without JavaScript the link is a page.
 *
 * Plain JavaScript, no build step. Loaded with `defer` after htmx.
 */
(function () {
  "use strict";

  function init() {
    const link = document.getElementById("memory-link");
    const drawer = document.getElementById("drawer");
    if (!link || !drawer || !window.htmx) return;

    function load(url) {
      return window.htmx.ajax("GET", url, { target: "#drawer-contents", swap: "outerHTML" });
    }

    function open() {
      drawer.hidden = false;
      link.setAttribute("aria-expanded", "true");
      document.body.classList.add("drawer-open");
      load(link.href).then(() => {
        const title = document.getElementById("drawer-title");
        if (title) title.focus();
      });
    }

    function close() {
      drawer.hidden = true;
      link.setAttribute("aria-expanded", "false");
      document.body.classList.remove("drawer-open");
      link.focus();
    }

    link.addEventListener("click", (evt) => {
      if (evt.metaKey || evt.ctrlKey || evt.shiftKey || evt.button !== 0) return;
      evt.preventDefault();
      if (drawer.hidden) open();
      else close();
    });
    drawer.addEventListener("click", (evt) => {
      if (evt.target.closest("[data-drawer-close]")) close();
    });
    document.addEventListener("keydown", (evt) => {
      if (evt.key === "Escape" && !drawer.hidden) close();
    });
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", init);
  } else {
    init();
  }
})();
