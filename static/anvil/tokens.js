// Live token estimates under a fragment's three tiers, as the person types.
// The same rule as heart.assemble.estimate_tokens: ceil(characters / chars-per-token), where
// characters are code points (Python's len), at the calibrated figure the page was given.
(function () {
  "use strict";
  const script = document.currentScript;
  const charsPerToken = parseFloat(script.dataset.charsPerToken) || 4;

  function estimate(text) {
    const characters = Array.from(text).length;
    return characters > 0 ? Math.ceil(characters / charsPerToken) : 0;
  }

  function attach(name) {
    const field = document.getElementById("id_" + name);
    if (!field) return;
    const note = document.createElement("span");
    note.className = "anvil-tokens";
    note.id = "anvil-tokens-" + name;
    note.setAttribute("aria-live", "polite");
    const update = () => {
      note.textContent = "≈ " + estimate(field.value) + " tokens";
    };
    field.insertAdjacentElement("afterend", note);
    field.addEventListener("input", update);
    update();
  }

  ["ambient", "recognition", "inventory"].forEach(attach);
})();
