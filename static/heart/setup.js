/*
 * The set-up page: "add an identity" copies the formset's empty row, and a time zone not yet
 * chosen starts at this browser's own (Intl), when the list has it. Without JavaScript the
 * page still works: one blank row to add an identity, the server's time zone.
 */
(function () {
  "use strict";

  const rows = document.getElementById("identity-rows");
  const template = document.getElementById("identity-template");
  const add = document.getElementById("identity-add");
  const total = document.querySelector('input[name="identity-TOTAL_FORMS"]');

  if (rows && template && add && total) {
    add.hidden = false;
    add.addEventListener("click", () => {
      const index = Number(total.value);
      const row = template.content.firstElementChild.cloneNode(true);
      for (const element of row.querySelectorAll("[id], [for], [name]")) {
        for (const attribute of ["id", "for", "name"]) {
          const value = element.getAttribute(attribute);
          if (value) element.setAttribute(attribute, value.replace("__prefix__", String(index)));
        }
      }
      rows.append(row);
      total.value = String(index + 1);
      const name = row.querySelector('input[name$="-name"]');
      if (name) name.focus();
    });
  }

  const zone = document.getElementById("id_time_zone");
  if (zone && document.body.dataset.zoneChosen === "false") {
    let here = "";
    try {
      here = Intl.DateTimeFormat().resolvedOptions().timeZone || "";
    } catch (_) {
      /* no Intl: keep the server's zone */
    }
    if (here && Array.from(zone.options).some((option) => option.value === here)) {
      zone.value = here;
      const hint = document.getElementById("zone-hint");
      if (hint) hint.textContent = "This browser's time zone. " + hint.textContent;
    }
  }
})();
