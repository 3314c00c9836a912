// Names the admin's own widgets leave out, given as they appear (on load, and in each row an
// inline form adds): a field in a row of a table of inline forms is named by its column's
// header, as a field elsewhere is by its label; select2's choice boxes are named by that name
// as well as by what is chosen; the filter boxes' magnifier, which carries a description, is a
// picture.
(function () {
  "use strict";

  let made = 0;

  function withId(element) {
    if (!element.id) element.id = `anvil-name-${++made}`;
    return element.id;
  }

  // The header of the column a field of a tabular inline row is in.
  function columnHeader(field) {
    const cell = field.closest("td");
    const table = cell && cell.closest("table");
    if (!table || !table.tHead || !table.tHead.rows.length) return null;
    const index = Array.from(cell.parentElement.children).indexOf(cell);
    const header = table.tHead.rows[0].cells[index];
    return header && header.textContent.trim() ? header : null;
  }

  function namer(field) {
    if (field.id) {
      const label = document.querySelector(`label[for="${field.id}"]`);
      if (label) return label;
    }
    return columnHeader(field);
  }

  function choiceBox(selection) {
    const select = selection.closest(".select2-container")?.previousElementSibling;
    const shown = selection.querySelector(".select2-selection__rendered");
    const name = select && namer(select);
    if (!name || !shown || !shown.id) return;
    const names = `${withId(name)} ${shown.id}`;
    selection.setAttribute("aria-labelledby", names);
    shown.setAttribute("aria-labelledby", names);
  }

  function unnamed(field) {
    if (field.labels.length || field.hasAttribute("aria-label")) return;
    if (field.hasAttribute("aria-labelledby")) return;
    const header = columnHeader(field);
    if (header) field.setAttribute("aria-labelledby", withId(header));
  }

  function name(root) {
    if (!(root instanceof Element)) return;
    root.querySelectorAll(".select2-selection[role=combobox]").forEach(choiceBox);
    root
      .querySelectorAll(
        ".tabular tbody input:not([type=hidden]), .tabular tbody select, .tabular tbody textarea",
      )
      .forEach(unnamed);
    root.querySelectorAll(".help-tooltip[aria-label]:not([role])").forEach((icon) => {
      icon.setAttribute("role", "img");
    });
  }

  new MutationObserver((changes) => {
    for (const change of changes) change.addedNodes.forEach(name);
  }).observe(document.documentElement, { childList: true, subtree: true });
  document.addEventListener("DOMContentLoaded", () => name(document.body));
})();
