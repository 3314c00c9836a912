// One live token count under each of a fragment's three tiers, as the person types, against
// the recall budget that reads the tier and the most a tier may hold.
// The same rule as silentstar.tokens.estimate_tokens: ceil(characters / chars-per-token), where
// characters are code points (Python's len), at the calibrated figure the page was given.
(function () {
  "use strict";
  const script = document.currentScript;
  const charsPerToken = parseFloat(script.dataset.charsPerToken) || 4;
  const budget = parseInt(script.dataset.budget, 10);
  const cap = parseInt(script.dataset.cap, 10);
  const number = new Intl.NumberFormat("en");

  function estimate(text) {
    const characters = Array.from(text).length;
    return characters > 0 ? Math.ceil(characters / charsPerToken) : 0;
  }

  function said(tokens) {
    const about = "≈ " + number.format(tokens) + " tokens";
    if (tokens > cap) {
      return about + ": past the " + number.format(cap) + " a tier may hold, so it cannot be saved";
    }
    if (tokens > budget) {
      return about + ": past the " + number.format(budget) +
        "-token recall budget that reads it, so only part of it can reach the companion";
    }
    return about + " of the " + number.format(budget) + "-token recall budget";
  }

  function attach(name) {
    const field = document.getElementById("id_" + name);
    if (!field) return;
    const note = document.createElement("span");
    note.className = "anvil-tokens";
    note.id = "anvil-tokens-" + name;
    note.setAttribute("aria-live", "polite");
    const update = () => {
      const tokens = estimate(field.value);
      note.textContent = said(tokens);
      note.classList.toggle("anvil-tokens-over", tokens > budget);
    };
    field.insertAdjacentElement("afterend", note);
    field.addEventListener("input", update);
    update();
  }

  ["ambient", "recognition", "inventory"].forEach(attach);
})();
