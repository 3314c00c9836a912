// Names the admin's own widgets leave out, given as they appear (on load, and in each row an
// inline form adds): select2's choice boxes are named by their field's label as well as by
// what is chosen, and the filter boxes' magnifier, which carries a description, is a picture.
(function () {
  "use strict";

  function labelled(element) {
    const select = element.closest(".select2-container")?.previousElementSibling;
    const label = select && select.id && document.querySelector(`label[for="${select.id}"]`);
    const shown = element.querySelector(".select2-selection__rendered");
    if (!label || !shown || !shown.id) return;
    if (!label.id) label.id = `${select.id}-label`;
    const names = `${label.id} ${shown.id}`;
    element.setAttribute("aria-labelledby", names);
    shown.setAttribute("aria-labelledby", names);
  }

  function name(root) {
    if (!(root instanceof Element)) return;
    root.querySelectorAll(".select2-selection[role=combobox]").forEach(labelled);
    root.querySelectorAll(".help-tooltip[aria-label]:not([role])").forEach((icon) => {
      icon.setAttribute("role", "img");
    });
  }

  new MutationObserver((changes) => {
    for (const change of changes) change.addedNodes.forEach(name);
  }).observe(document.documentElement, { childList: true, subtree: true });
  document.addEventListener("DOMContentLoaded", () => name(document.body));
})();
