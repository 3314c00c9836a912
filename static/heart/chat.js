/*
 * Silentstar chat page: the composer (identity chips, tag buttons, a
 * contenteditable input whose spans carry format and knowledge state), image
 * compression, sending, keeping the conversation scrolled, and the service
 * worker.
 *
 * Plain JavaScript, no build step. Loaded with `defer` after htmx.
 *
 * Public hooks (for tests): window.silentstar.serialise(root) -> string,
 * window.silentstar.compressImage(file) -> Promise<{blob, name}>,
 * window.silentstar.IMAGE_LIMIT, window.silentstar.IMAGE_MAX_SIDE.
 */
(function () {
  "use strict";

  const silentstar = (window.silentstar = window.silentstar || {});

  const ZWSP = "\u200B";
  const FORMATS = ["do", "narrate"];
  const KNOWLEDGE = ["plan", "pin"];
  const IMAGE_LIMIT = 3932160; // raw bytes; 5 MB once base64-encoded for the API
  const IMAGE_MAX_SIDE = 2048;
  const JPEG_QUALITIES = [0.9, 0.8, 0.7, 0.6, 0.5];
  const KEPT_TYPES = new Set(["image/jpeg", "image/png", "image/gif", "image/webp"]);
  const LOSSLESS_TYPES = new Set(["image/png", "image/gif", "image/webp"]);
  const IDENTITY_KEY = "silentstar.identity";
  const ENTER_SENDS_KEY = "silentstar.enterSends";
  const NEAR_BOTTOM_PX = 96;
  const BLOCK_TAGS = new Set([
    "ADDRESS", "ARTICLE", "ASIDE", "BLOCKQUOTE", "DD", "DIV", "DL", "DT", "FIGCAPTION",
    "FIGURE", "FOOTER", "H1", "H2", "H3", "H4", "H5", "H6", "HEADER", "HR", "LI", "MAIN",
    "NAV", "OL", "P", "PRE", "SECTION", "TABLE", "TR", "UL",
  ]);
  const SKIPPED_TAGS = new Set(["SCRIPT", "STYLE", "TEMPLATE", "NOSCRIPT"]);

  /* ------------------------------------------------------------------ state */

  function normaliseFormat(value) {
    return FORMATS.includes(value) ? value : "";
  }

  function normaliseKnowledge(value) {
    const words = String(value || "").split(/\s+/);
    return KNOWLEDGE.filter((k) => words.includes(k)).join(" ");
  }

  function isStateSpan(node) {
    return (
      node.nodeType === Node.ELEMENT_NODE &&
      node.tagName === "SPAN" &&
      (node.hasAttribute("data-format") || node.hasAttribute("data-knowledge"))
    );
  }

  // The state an element gives its text, given the state it inherits.
  function stateOf(element, inherited) {
    if (!isStateSpan(element)) return inherited;
    return {
      format: element.hasAttribute("data-format")
        ? normaliseFormat(element.getAttribute("data-format"))
        : inherited.format,
      knowledge: element.hasAttribute("data-knowledge")
        ? normaliseKnowledge(element.getAttribute("data-knowledge"))
        : inherited.knowledge,
    };
  }

  const PLAIN = Object.freeze({ format: "", knowledge: "" });

  function sameState(a, b) {
    return a.format === b.format && a.knowledge === b.knowledge;
  }

  /* ---------------------------------------------------------- serialisation */

  // Wrap `inner` in <tag>…</tag>, leaving its outer whitespace outside the tag;
  // whitespace alone is returned bare.
  function wrap(tag, inner) {
    const match = /^(\s*)([\s\S]*?)(\s*)$/.exec(inner);
    if (!match[2]) return inner;
    return match[1] + "<" + tag + ">" + match[2] + "</" + tag + ">" + match[3];
  }

  /**
   * Turn the contenteditable DOM under `root` into the tagged text the server
   * stores: format spans become <do>/<narrate>, knowledge wraps outside format
   * (<plan><do>…</do></plan>), adjacent runs with the same state are merged,
   * <br> and block elements become newlines, &nbsp; becomes a space, and the
   * text itself is not escaped. The ends are trimmed.
   */
  function serialise(root) {
    if (!root) return "";
    const runs = [];

    function push(text, state) {
      if (!text) return;
      const last = runs[runs.length - 1];
      if (last && sameState(last, state)) last.text += text;
      else runs.push({ text: text, format: state.format, knowledge: state.knowledge });
    }

    function atLineStart() {
      for (let i = runs.length - 1; i >= 0; i--) {
        if (runs[i].text) return runs[i].text.endsWith("\n");
      }
      return true;
    }

    function walk(node, state) {
      for (const child of node.childNodes) {
        if (child.nodeType === Node.TEXT_NODE) {
          push(child.data.replace(/\u200B/g, "").replace(/\u00A0/g, " "), state);
        } else if (child.nodeType === Node.ELEMENT_NODE) {
          if (SKIPPED_TAGS.has(child.tagName)) continue;
          if (child.tagName === "BR") {
            push("\n", state);
            continue;
          }
          const block = BLOCK_TAGS.has(child.tagName);
          if (block && !atLineStart()) push("\n", state);
          walk(child, stateOf(child, state));
          if (block && !atLineStart()) push("\n", state);
        }
      }
    }

    walk(root, PLAIN);

    let out = "";
    let i = 0;
    while (i < runs.length) {
      const knowledge = runs[i].knowledge;
      let inner = "";
      while (i < runs.length && runs[i].knowledge === knowledge) {
        inner += runs[i].format ? wrap(runs[i].format, runs[i].text) : runs[i].text;
        i++;
      }
      const tags = knowledge ? knowledge.split(" ") : [];
      for (let t = tags.length - 1; t >= 0; t--) inner = wrap(tags[t], inner);
      out += inner;
    }
    return out.trim();
  }

  silentstar.serialise = serialise;

  /* ------------------------------------------------------------------ images */

  function canvasToBlob(canvas, type, quality) {
    return new Promise((resolve) => canvas.toBlob(resolve, type, quality));
  }

  async function decodeImage(file) {
    if (window.createImageBitmap) {
      try {
        const bitmap = await createImageBitmap(file, { imageOrientation: "from-image" });
        return { source: bitmap, width: bitmap.width, height: bitmap.height, close: () => bitmap.close() };
      } catch (_) {
        /* fall back to an <img> below */
      }
    }
    const url = URL.createObjectURL(file);
    try {
      const img = new Image();
      img.decoding = "async";
      img.src = url;
      await img.decode();
      return { source: img, width: img.naturalWidth, height: img.naturalHeight, close: () => {} };
    } finally {
      URL.revokeObjectURL(url);
    }
  }

  function renamed(name, extension) {
    const base = String(name || "image").replace(/\.[^./\\]*$/, "").replace(/[^\w.-]+/g, "-");
    return (base.replace(/^-+|-+$/g, "") || "image") + "." + extension;
  }

  /**
   * Make an image fit what the API accepts: at most IMAGE_MAX_SIDE px on the
   * long side and at most IMAGE_LIMIT raw bytes. Small JPEG/PNG/GIF/WEBP files
   * are kept as they are; the rest are redrawn on a canvas (PNG kept lossless
   * when it fits, otherwise JPEG with falling quality).
   */
  async function compressImage(file) {
    if (!file || !/^image\//.test(file.type)) {
      throw new Error("That file is not an image.");
    }
    let decoded;
    try {
      decoded = await decodeImage(file);
    } catch (_) {
      throw new Error("This browser cannot read that image. Try a JPEG or PNG.");
    }
    try {
      const { width, height } = decoded;
      const longSide = Math.max(width, height);
      if (file.size <= IMAGE_LIMIT && longSide <= IMAGE_MAX_SIDE && KEPT_TYPES.has(file.type)) {
        return { blob: file, name: file.name || renamed("image", file.type.split("/")[1]) };
      }
      const scale = Math.min(1, IMAGE_MAX_SIDE / longSide);
      const canvas = document.createElement("canvas");
      canvas.width = Math.max(1, Math.round(width * scale));
      canvas.height = Math.max(1, Math.round(height * scale));
      const ctx = canvas.getContext("2d");
      ctx.imageSmoothingQuality = "high";
      ctx.drawImage(decoded.source, 0, 0, canvas.width, canvas.height);

      if (LOSSLESS_TYPES.has(file.type)) {
        const png = await canvasToBlob(canvas, "image/png");
        if (png && png.size <= IMAGE_LIMIT) return { blob: png, name: renamed(file.name, "png") };
      }
      // JPEG has no transparency: put the picture on white first.
      ctx.globalCompositeOperation = "destination-over";
      ctx.fillStyle = "#ffffff";
      ctx.fillRect(0, 0, canvas.width, canvas.height);
      ctx.globalCompositeOperation = "source-over";
      for (const quality of JPEG_QUALITIES) {
        const jpeg = await canvasToBlob(canvas, "image/jpeg", quality);
        if (jpeg && jpeg.size <= IMAGE_LIMIT) return { blob: jpeg, name: renamed(file.name, "jpg") };
      }
      throw new Error("This image is too large to send, even compressed.");
    } finally {
      decoded.close();
    }
  }

  silentstar.compressImage = compressImage;
  silentstar.IMAGE_LIMIT = IMAGE_LIMIT;
  silentstar.IMAGE_MAX_SIDE = IMAGE_MAX_SIDE;

  /* ------------------------------------------------------- service worker */

  function registerServiceWorker() {
    if (!("serviceWorker" in navigator)) return;
    const register = () =>
      navigator.serviceWorker.register("/sw.js", { scope: "/" }).catch(() => {
        /* the page works without it */
      });
    if (document.readyState === "complete") register();
    else window.addEventListener("load", register, { once: true });
  }

  registerServiceWorker();

  /* ------------------------------------------------ animations in phase */

  // Polling swaps the pending reply and the worker dot for fresh copies, which
  // would restart their CSS animations every poll. Starting each copy at the
  // same point of a wall-clock cycle keeps the breathing smooth.
  const ANIMATION_PERIODS = [
    [".breathing", 2800], // chat.css: breathe 2.8s
    ['.worker-dot[data-state="busy"]', 1600], // chat.css: pulse 1.6s
  ];

  function syncAnimations(root) {
    if (!root || root.nodeType !== Node.ELEMENT_NODE) return;
    const now = Date.now();
    for (const [selector, period] of ANIMATION_PERIODS) {
      const found = Array.from(root.querySelectorAll(selector));
      if (root.matches(selector)) found.push(root);
      for (const el of found) {
        // Only new copies: moving the delay of a running animation makes it jump.
        if (!el.style.animationDelay) el.style.animationDelay = "-" + (now % period) + "ms";
      }
    }
  }

  syncAnimations(document.body);
  document.addEventListener("htmx:load", (evt) => syncAnimations(evt.detail && evt.detail.elt));
  document.addEventListener("htmx:afterSettle", (evt) => syncAnimations(evt.detail && evt.detail.elt));

  /* ------------------------------------------------ the server's reachability */

  // The worker's dot asks the server every few seconds. When the server does not answer, the
  // dot says so (it would otherwise keep saying the worker is ready); the next answer that
  // arrives puts the server's word back.
  const UNREACHABLE = "No answer from the server: your messages are kept on it, and this page carries on when it is back";

  function serverUnreachable(evt) {
    const elt = evt.detail && evt.detail.elt;
    if (!elt || elt.id !== "worker-status") return;
    elt.dataset.state = "unreachable";
    elt.title = UNREACHABLE;
    const dot = elt.querySelector(".worker-dot");
    if (dot) dot.dataset.state = "unreachable";
    const words = elt.querySelector(".worker-words");
    if (words) {
      words.textContent = "no connection";
      words.classList.remove("visually-hidden");
    }
  }

  document.addEventListener("htmx:sendError", serverUnreachable);
  document.addEventListener("htmx:timeout", serverUnreachable);
  document.addEventListener("htmx:responseError", serverUnreachable);

  /* ------------------------------------------------ "again" on the newest reply only */

  // "again" asks for the newest reply again: when a newer one arrives on the open page, the
  // older replies' "again" goes (the server would refuse it, saying so).
  function againOnNewestOnly() {
    const history = document.getElementById("history");
    if (!history) return;
    const forms = Array.from(history.querySelectorAll('form[action$="/again/"]'));
    for (const form of forms.slice(0, -1)) {
      const group = form.closest(".reply-choice");
      form.remove();
      if (group && !group.querySelector("form, .reply-place")) group.remove();
    }
  }

  document.addEventListener("htmx:afterSettle", againOnNewestOnly);

  /* ------------------------------------------------------------ the header's menu */

  // The other pages' links: always open on a wide screen (its "menu" line hidden), folded on
  // a phone, where "menu" opens them and a tap elsewhere or Escape closes them.
  const menu = document.querySelector(".chat-menu");
  if (menu && window.matchMedia) {
    const narrow = window.matchMedia("(max-width: 600px)");
    const fit = () => {
      menu.open = !narrow.matches;
    };
    fit();
    narrow.addEventListener("change", fit);
    document.addEventListener("click", (evt) => {
      if (narrow.matches && menu.open && !menu.contains(evt.target)) menu.open = false;
    });
    document.addEventListener("keydown", (evt) => {
      if (evt.key === "Escape" && narrow.matches && menu.open) menu.open = false;
    });
  }

  /* ------------------------------------------------------------ the page */

  const form = document.getElementById("composer");
  const input = document.getElementById("input");
  if (form && input) initComposer();
  initConversation();

  function csrfToken() {
    const meta = document.querySelector('meta[name="csrf-token"]');
    if (meta && meta.content) return meta.content;
    try {
      const headers = JSON.parse(document.body.getAttribute("hx-headers") || "{}");
      if (headers["X-CSRFToken"]) return headers["X-CSRFToken"];
    } catch (_) {
      /* not JSON */
    }
    const field = form && form.querySelector('input[name="csrfmiddlewaretoken"]');
    if (field) return field.value;
    const cookie = document.cookie.split("; ").find((c) => c.startsWith("csrftoken="));
    return cookie ? decodeURIComponent(cookie.slice("csrftoken=".length)) : "";
  }

  /* ---------------------------------------------------- the conversation */

  function initConversation() {
    const conversation = document.getElementById("conversation");
    const history = document.getElementById("history");
    if (!conversation || !history) return;

    let stick = true; // follow new content while the reader is near the bottom
    let holdPosition = null; // distance from the bottom kept while earlier messages load

    const scrollToBottom = () => {
      conversation.scrollTop = conversation.scrollHeight;
    };
    silentstar.scrollToBottom = () => {
      stick = true;
      scrollToBottom();
    };

    conversation.addEventListener(
      "scroll",
      () => {
        const gap = conversation.scrollHeight - conversation.scrollTop - conversation.clientHeight;
        stick = gap < NEAR_BOTTOM_PX;
      },
      { passive: true }
    );

    let queued = false;
    const follow = () => {
      if (queued || !stick || holdPosition !== null) return;
      queued = true;
      requestAnimationFrame(() => {
        queued = false;
        if (stick && holdPosition === null) scrollToBottom();
      });
    };

    new MutationObserver(follow).observe(history, {
      childList: true,
      subtree: true,
      characterData: true,
    });
    // Pictures change the height when they arrive.
    history.addEventListener("load", follow, true);

    const fromEarlierButton = (evt) => {
      const elt = evt.detail && evt.detail.elt;
      return !!(elt && elt.closest && elt.closest("button.earlier"));
    };
    document.body.addEventListener("htmx:beforeSwap", (evt) => {
      if (fromEarlierButton(evt)) {
        holdPosition = conversation.scrollHeight - conversation.scrollTop;
      }
    });
    document.body.addEventListener("htmx:afterSwap", (evt) => {
      if (holdPosition !== null) {
        conversation.scrollTop = conversation.scrollHeight - holdPosition;
      } else if (stick && history.contains(evt.detail.target || evt.target)) {
        scrollToBottom();
      } else if (stick) {
        follow();
      }
    });
    document.body.addEventListener("htmx:afterSettle", () => {
      if (holdPosition !== null) {
        conversation.scrollTop = conversation.scrollHeight - holdPosition;
        holdPosition = null;
      }
    });
    document.body.addEventListener("htmx:responseError", (evt) => {
      if (fromEarlierButton(evt)) holdPosition = null;
    });

    scrollToBottom();
  }

  /* ------------------------------------------------------------ composer */

  function initComposer() {
    const messageField = document.getElementById("message-field");
    const identityField = document.getElementById("identity-field");
    const chipBox = document.getElementById("identity-chips");
    const tagBox = document.getElementById("tag-buttons");
    const imageInput = document.getElementById("image-input");
    const imageButton = document.getElementById("image-button");
    const imagePreview = document.getElementById("image-preview");
    const imageRemove = document.getElementById("image-remove");
    const sendButton = document.getElementById("send");
    const errorBox = document.getElementById("composer-error");
    const chips = chipBox ? Array.from(chipBox.querySelectorAll("button.chip[data-identity]")) : [];
    const tagButtons = tagBox ? Array.from(tagBox.querySelectorAll("button[data-tag]")) : [];

    if (!input.hasAttribute("role")) input.setAttribute("role", "textbox");
    if (!input.hasAttribute("aria-multiline")) input.setAttribute("aria-multiline", "true");

    let savedRange = null; // the last selection inside #input
    let composing = false;
    let sending = false;
    let image = null; // {blob, name, url}
    let imagePending = null; // Promise while an image is being prepared

    /* ------------------------------------------------------ messages */

    function showError(content) {
      if (!errorBox) return;
      errorBox.replaceChildren();
      if (!content) return;
      if (typeof content === "string") {
        const p = document.createElement("p");
        p.className = "composer-error";
        p.setAttribute("role", "alert");
        p.textContent = content;
        errorBox.append(p);
      } else {
        errorBox.append(content);
      }
    }

    function showResponseError(text, status) {
      const doc = new DOMParser().parseFromString(text || "", "text/html");
      const fragment = doc.querySelector(".composer-error");
      // A full disk or read-only data met elsewhere than the send itself: the page says which.
      const diskTrouble = doc.querySelector("[data-disk-trouble]");
      if (fragment) {
        showError(document.importNode(fragment, true));
      } else if (diskTrouble) {
        showError(diskTrouble.textContent.trim() + " Your message is still here.");
      } else if (status === 403) {
        showError("The page has expired. Reload it and send again — your message is still here.");
      } else if (text && text.length < 300 && !/<html|<body/i.test(text)) {
        showError((doc.body.textContent || "").trim() || "Could not send (" + status + ").");
      } else {
        showError("Could not send (" + status + "). Your message is still here — try again.");
      }
    }

    /* ------------------------------------------------ identity chips */

    function identityColour(chip) {
      return getComputedStyle(chip).getPropertyValue("--identity").trim();
    }

    // The chips are a radio group: one identity is always chosen, and choosing the chosen one
    // keeps it. Arrow keys move along the group; only the chosen chip is in the tab order.
    function selectIdentity(chip, remember) {
      if (!chip) return;
      for (const other of chips) {
        other.setAttribute("aria-checked", String(other === chip));
        other.tabIndex = other === chip ? 0 : -1;
      }
      const name = chip.dataset.identity;
      if (identityField) identityField.value = name;
      if (identityColour(chip)) input.style.setProperty("--identity", identityColour(chip));
      else input.style.removeProperty("--identity");
      input.dataset.identity = name;
      if (remember) {
        try {
          localStorage.setItem(IDENTITY_KEY, name);
        } catch (_) {
          /* storage unavailable */
        }
      }
    }

    for (const chip of chips) {
      chip.addEventListener("mousedown", (e) => e.preventDefault()); // keep the caret in #input
      chip.addEventListener("click", (e) => {
        e.preventDefault();
        selectIdentity(chip, true);
      });
      chip.addEventListener("keydown", (e) => {
        const step = { ArrowRight: 1, ArrowDown: 1, ArrowLeft: -1, ArrowUp: -1 }[e.key];
        if (!step) return;
        e.preventDefault();
        const next = chips[(chips.indexOf(chip) + step + chips.length) % chips.length];
        selectIdentity(next, true);
        next.focus();
      });
    }

    // The identity last chosen in this browser, else the one the page chose (the person's
    // last message's), else the first.
    (function restoreIdentity() {
      let saved = null;
      try {
        saved = localStorage.getItem(IDENTITY_KEY);
      } catch (_) {
        /* storage unavailable */
      }
      const chip =
        chips.find((c) => c.dataset.identity === saved) ||
        chips.find((c) => c.getAttribute("aria-checked") === "true") ||
        chips[0];
      selectIdentity(chip, false);
    })();

    /* ------------------------------------------------- Enter sends */

    // On a desktop Enter sends and Shift+Enter starts a new line; on a touch screen Enter
    // starts a new line and the send button sends. The person's own choice is remembered.
    const enterSendsBox = document.getElementById("enter-sends");
    const sendKeys = document.getElementById("send-keys");
    const sendHint = document.getElementById("send-hint");
    const touchFirst = !!(window.matchMedia && window.matchMedia("(pointer: coarse)").matches);
    let enterSends = !touchFirst;
    try {
      const chosen = localStorage.getItem(ENTER_SENDS_KEY);
      if (chosen === "true" || chosen === "false") enterSends = chosen === "true";
    } catch (_) {
      /* storage unavailable */
    }

    function showEnterSends() {
      if (enterSendsBox) enterSendsBox.checked = enterSends;
      if (sendHint) {
        sendHint.textContent = enterSends ? "Shift+Enter for a new line" : "Ctrl+Enter sends";
      }
    }

    if (enterSendsBox) {
      enterSendsBox.addEventListener("change", () => {
        enterSends = enterSendsBox.checked;
        try {
          localStorage.setItem(ENTER_SENDS_KEY, String(enterSends));
        } catch (_) {
          /* storage unavailable */
        }
        showEnterSends();
      });
    }
    if (sendKeys) sendKeys.hidden = false;
    showEnterSends();

    /* -------------------------------------------------- selection */

    function inInput(node) {
      return !!node && (node === input || input.contains(node));
    }

    function currentRange() {
      const sel = window.getSelection();
      if (sel && sel.rangeCount && inInput(sel.anchorNode) && inInput(sel.focusNode)) {
        return sel.getRangeAt(0);
      }
      return null;
    }

    function setCaret(node, offset) {
      const range = document.createRange();
      range.setStart(node, offset);
      range.collapse(true);
      selectRange(range);
    }

    function selectRange(range) {
      const sel = window.getSelection();
      sel.removeAllRanges();
      sel.addRange(range);
      savedRange = range.cloneRange();
    }

    // The range to act on: the live selection in #input, or the last one, or the end.
    function workingRange() {
      const live = currentRange();
      if (live) return live;
      if (savedRange && inInput(savedRange.startContainer) && inInput(savedRange.endContainer)) {
        input.focus({ preventScroll: true });
        selectRange(savedRange);
        return currentRange() || savedRange;
      }
      input.focus({ preventScroll: true });
      const range = document.createRange();
      range.selectNodeContents(input);
      range.collapse(false);
      selectRange(range);
      return range;
    }

    function stateAt(node) {
      let state = PLAIN;
      const chain = [];
      for (let n = node; n && n !== input; n = n.parentNode) chain.unshift(n);
      for (const n of chain) state = stateOf(n, state);
      return state;
    }

    function topStateSpan(node) {
      let top = null;
      for (let n = node; n && n !== input; n = n.parentNode) if (isStateSpan(n)) top = n;
      return top;
    }

    function makeSpan(state) {
      const span = document.createElement("span");
      span.setAttribute("data-format", state.format);
      span.setAttribute("data-knowledge", state.knowledge);
      return span;
    }

    // A collapsed range at `range`'s start but outside every state span,
    // splitting the span around it when needed.
    function pointOutsideSpans(range) {
      const top = topStateSpan(range.startContainer);
      if (!top) {
        const here = document.createRange();
        here.setStart(range.startContainer, range.startOffset);
        here.collapse(true);
        return here;
      }
      const tailRange = document.createRange();
      tailRange.setStart(range.startContainer, range.startOffset);
      tailRange.setEnd(top, top.childNodes.length);
      const tail = top.cloneNode(false);
      tail.append(tailRange.extractContents());
      top.after(tail);
      const point = document.createRange();
      point.setStartAfter(top);
      point.collapse(true);
      return point;
    }

    /* ------------------------------------------------ normalising */

    function hasContent(node) {
      return node.textContent.replace(/\u200B/g, "") !== "" || !!node.querySelector("br, img");
    }

    // Keep #input to text, <br>, line blocks and our state spans: unwrap what
    // the browser adds (styled spans, <b>, <font>), drop stray zero-width
    // spaces and empty spans, merge neighbouring spans with the same state.
    function normalise() {
      const sel = window.getSelection();
      const live = currentRange();
      const marks = live
        ? { a: [sel.anchorNode, sel.anchorOffset], f: [sel.focusNode, sel.focusOffset] }
        : null;
      const caretNode = live ? sel.focusNode : null;

      const elements = Array.from(input.querySelectorAll("*")).reverse();
      for (const el of elements) {
        if (!el.isConnected) continue;
        if (el.tagName === "BR" || isStateSpan(el)) continue;
        if (BLOCK_TAGS.has(el.tagName) && el.tagName !== "HR") {
          el.removeAttribute("style");
          continue;
        }
        if (el.tagName === "IMG" || el.tagName === "HR" || SKIPPED_TAGS.has(el.tagName)) {
          el.remove();
          continue;
        }
        const parent = el.parentNode;
        while (el.firstChild) parent.insertBefore(el.firstChild, el);
        el.remove();
      }

      const walker = document.createTreeWalker(input, NodeFilter.SHOW_TEXT);
      const texts = [];
      while (walker.nextNode()) texts.push(walker.currentNode);
      for (const text of texts) {
        if (!text.data.includes(ZWSP) || text.data === ZWSP) continue;
        for (const mark of marks ? [marks.a, marks.f] : []) {
          if (mark[0] === text) mark[1] -= (text.data.slice(0, mark[1]).match(/\u200B/g) || []).length;
        }
        text.data = text.data.replace(/\u200B/g, "");
      }

      for (const span of Array.from(input.querySelectorAll("span")).reverse()) {
        if (!span.isConnected || !isStateSpan(span)) continue;
        span.removeAttribute("style");
        const holdsCaret = caretNode && (span === caretNode || span.contains(caretNode));
        if (!hasContent(span) && !holdsCaret) {
          span.remove();
          continue;
        }
        const prev = span.previousSibling;
        if (prev && isStateSpan(prev) && sameState(stateOf(prev, PLAIN), stateOf(span, PLAIN))) {
          while (span.firstChild) prev.append(span.firstChild);
          span.remove();
        }
      }

      if (marks && marks.a[0].isConnected && marks.f[0].isConnected) {
        try {
          sel.setBaseAndExtent(marks.a[0], marks.a[1], marks.f[0], marks.f[1]);
        } catch (_) {
          /* the browser kept its own selection */
        }
      }
      updateEmpty();
    }

    function updateEmpty() {
      const empty = input.textContent.replace(/\u200B/g, "").trim() === "";
      input.classList.toggle("is-empty", empty);
      if (empty && !input.querySelector("span") && input.childNodes.length) {
        // Drop the lone <br>s a browser leaves behind so :empty matches again.
        if (!Array.from(input.childNodes).some((n) => n.nodeType === Node.TEXT_NODE && n.data)) {
          input.replaceChildren();
        }
      }
    }

    /* ----------------------------------------------------- tag buttons */

    function setButtons(state) {
      const knowledge = state.knowledge ? state.knowledge.split(" ") : [];
      for (const button of tagButtons) {
        const tag = button.dataset.tag;
        const on = FORMATS.includes(tag) ? state.format === tag : knowledge.includes(tag);
        button.setAttribute("aria-pressed", String(on));
      }
    }

    function toggled(state, tag, on) {
      if (FORMATS.includes(tag)) return { format: on ? tag : "", knowledge: state.knowledge };
      const words = state.knowledge ? state.knowledge.split(" ") : [];
      const next = on ? words.concat(tag) : words.filter((w) => w !== tag);
      return { format: state.format, knowledge: normaliseKnowledge(next.join(" ")) };
    }

    function hasTag(state, tag) {
      return FORMATS.includes(tag) ? state.format === tag : state.knowledge.split(" ").includes(tag);
    }

    // Caret: text typed from here on goes into a new span with the new state.
    function toggleAtCaret(range, tag) {
      const state = stateAt(range.startContainer);
      const next = toggled(state, tag, !hasTag(state, tag));
      const point = pointOutsideSpans(range);
      const span = makeSpan(next);
      span.textContent = ZWSP;
      point.insertNode(span);
      setCaret(span.firstChild, 1);
      normalise();
      setButtons(next);
    }

    // Selection: the selected text gets the tag (or loses it when all of it has it).
    function toggleOnSelection(range, tag) {
      const outer = stateAt(range.commonAncestorContainer);
      const fragment = range.extractContents();
      const pieces = [];
      const walker = document.createTreeWalker(fragment, NodeFilter.SHOW_ALL);
      while (walker.nextNode()) {
        const node = walker.currentNode;
        if (node.nodeType === Node.TEXT_NODE || node.nodeName === "BR") {
          let state = outer;
          const chain = [];
          for (let n = node.parentNode; n && n !== fragment; n = n.parentNode) chain.unshift(n);
          for (const n of chain) state = stateOf(n, state);
          pieces.push({ node: node, state: state });
        }
      }
      const meaningful = pieces.filter((p) => p.node.nodeType === Node.TEXT_NODE && p.node.data.trim());
      const on = !(meaningful.length && meaningful.every((p) => hasTag(p.state, tag)));
      for (const piece of pieces) {
        const span = makeSpan(toggled(piece.state, tag, on));
        piece.node.replaceWith(span);
        span.append(piece.node);
      }
      // Unwrap the old state spans the extraction cloned; keep only the new ones.
      for (const old of Array.from(fragment.querySelectorAll("span")).reverse()) {
        if (!old.parentNode || !isStateSpan(old)) continue;
        const isNew = pieces.some((p) => p.node.parentNode === old);
        if (isNew) continue;
        while (old.firstChild) old.parentNode.insertBefore(old.firstChild, old);
        old.remove();
      }
      const texts = pieces.filter((p) => p.node.nodeType === Node.TEXT_NODE).map((p) => p.node);
      const point = pointOutsideSpans(range);
      point.insertNode(fragment);
      if (texts.length) {
        // Select by text nodes: normalising moves nodes but keeps them.
        const last = texts[texts.length - 1];
        const selected = document.createRange();
        selected.setStart(texts[0], 0);
        selected.setEnd(last, last.data.length);
        selectRange(selected);
      }
      normalise();
      const after = currentRange();
      setButtons(after ? stateAt(after.startContainer) : PLAIN);
    }

    for (const button of tagButtons) {
      button.addEventListener("mousedown", (e) => e.preventDefault()); // keep the selection
      button.addEventListener("click", (e) => {
        e.preventDefault();
        const tag = button.dataset.tag;
        if (!FORMATS.includes(tag) && !KNOWLEDGE.includes(tag)) return;
        const range = workingRange();
        if (range.collapsed) toggleAtCaret(range, tag);
        else toggleOnSelection(range, tag);
        input.focus({ preventScroll: true });
      });
    }

    document.addEventListener("selectionchange", () => {
      const range = currentRange();
      if (!range) return;
      savedRange = range.cloneRange();
      setButtons(stateAt(range.startContainer));
    });

    /* ----------------------------------------------------- typing */

    input.addEventListener("beforeinput", (e) => {
      if (e.inputType && e.inputType.startsWith("format")) e.preventDefault();
    });

    input.addEventListener("input", () => {
      if (!composing) normalise();
      clearStaleError();
    });
    input.addEventListener("compositionstart", () => {
      composing = true;
    });
    input.addEventListener("compositionend", () => {
      composing = false;
      normalise();
    });

    function insertLineBreak() {
      if (document.execCommand && document.execCommand("insertLineBreak")) return;
      const range = workingRange();
      range.deleteContents();
      const br = document.createElement("br");
      range.insertNode(br);
      if (!br.nextSibling) br.after(document.createElement("br"));
      setCaret(br.parentNode, Array.prototype.indexOf.call(br.parentNode.childNodes, br) + 1);
      normalise();
    }

    function insertPlainText(text) {
      text = text.replace(/\r\n?/g, "\n");
      if (document.execCommand && document.queryCommandSupported("insertText")) {
        // Line by line with <br>s, so the lines stay inside the span at the caret.
        text.split("\n").forEach((line, index) => {
          if (index) insertLineBreak();
          if (line) document.execCommand("insertText", false, line);
        });
        return;
      }
      const range = workingRange();
      range.deleteContents();
      const fragment = document.createDocumentFragment();
      text.split("\n").forEach((line, index) => {
        if (index) fragment.append(document.createElement("br"));
        if (line) fragment.append(document.createTextNode(line));
      });
      const last = fragment.lastChild;
      range.insertNode(fragment);
      if (last) {
        const after = document.createRange();
        after.setStartAfter(last);
        after.collapse(true);
        selectRange(after);
      }
      normalise();
    }

    input.addEventListener("keydown", (e) => {
      if (e.key !== "Enter" || e.isComposing || composing) return;
      if (e.ctrlKey || e.metaKey) return; // handled by the form: send
      e.preventDefault();
      if (enterSends && !e.shiftKey && !e.altKey) send();
      else insertLineBreak();
    });

    input.addEventListener("paste", (e) => {
      const data = e.clipboardData;
      if (!data) return;
      const file = Array.from(data.files || []).find((f) => /^image\//.test(f.type));
      e.preventDefault();
      if (file) {
        takeImage(file);
        return;
      }
      const text = data.getData("text/plain");
      if (text) insertPlainText(text);
    });

    form.addEventListener("keydown", (e) => {
      if (e.key === "Enter" && (e.ctrlKey || e.metaKey) && !e.isComposing) {
        e.preventDefault();
        send();
      }
    });

    form.addEventListener("submit", (e) => {
      e.preventDefault();
      send();
    });

    /* ---------------------------------------------------------- images */

    function clearImage() {
      if (image && image.url) URL.revokeObjectURL(image.url);
      image = null;
      if (imageInput) imageInput.value = "";
      if (imagePreview) {
        imagePreview.hidden = true;
        const img = imagePreview.querySelector("img");
        if (img) img.removeAttribute("src");
      }
      form.classList.remove("has-image");
    }

    function takeImage(file) {
      showError(null);
      clearImage();
      if (imageButton) imageButton.setAttribute("aria-busy", "true");
      form.classList.add("preparing-image");
      const job = compressImage(file)
        .then((result) => {
          if (imagePending !== job) return; // a newer image replaced this one
          image = { blob: result.blob, name: result.name, url: URL.createObjectURL(result.blob) };
          if (imagePreview) {
            const img = imagePreview.querySelector("img");
            if (img) {
              img.src = image.url;
              if (!img.alt) img.alt = "Attached image";
            }
            imagePreview.hidden = false;
          }
          form.classList.add("has-image");
        })
        .catch((err) => {
          if (imagePending !== job) return;
          clearImage();
          showError(err && err.message ? err.message : "Could not prepare that image.");
        })
        .finally(() => {
          if (imagePending !== job) return;
          imagePending = null;
          if (imageButton) imageButton.removeAttribute("aria-busy");
          form.classList.remove("preparing-image");
        });
      imagePending = job;
      return job;
    }

    if (imageButton && imageInput) {
      imageButton.addEventListener("click", (e) => {
        e.preventDefault();
        imageInput.click();
      });
    }
    if (imageInput) {
      imageInput.addEventListener("change", () => {
        const file = imageInput.files && imageInput.files[0];
        if (file) takeImage(file);
      });
    }
    if (imageRemove) {
      imageRemove.addEventListener("click", (e) => {
        e.preventDefault();
        imagePending = null;
        clearImage();
        if (imageButton) imageButton.removeAttribute("aria-busy");
        form.classList.remove("preparing-image");
        input.focus({ preventScroll: true });
      });
    }

    const carriesFiles = (e) =>
      e.dataTransfer && Array.from(e.dataTransfer.types || []).includes("Files");
    let dragDepth = 0;
    form.addEventListener("dragenter", (e) => {
      if (!carriesFiles(e)) return;
      e.preventDefault();
      dragDepth++;
      form.classList.add("dragging");
    });
    form.addEventListener("dragover", (e) => {
      if (!carriesFiles(e)) return;
      e.preventDefault();
      e.dataTransfer.dropEffect = "copy";
    });
    form.addEventListener("dragleave", (e) => {
      if (!carriesFiles(e)) return;
      dragDepth = Math.max(0, dragDepth - 1);
      if (!dragDepth) form.classList.remove("dragging");
    });
    form.addEventListener("drop", (e) => {
      if (!carriesFiles(e)) return;
      e.preventDefault();
      dragDepth = 0;
      form.classList.remove("dragging");
      const file = Array.from(e.dataTransfer.files).find((f) => /^image\//.test(f.type));
      if (file) takeImage(file);
      else showError("Only images can be attached.");
    });

    /* ------------------------------------------------------------ send */

    let errorShownFor = null;
    function clearStaleError() {
      // An error about the previous attempt goes once the person edits.
      if (errorShownFor !== null && serialise(input) !== errorShownFor) {
        errorShownFor = null;
        showError(null);
      }
    }

    function appendToHistory(html) {
      const history = document.getElementById("history");
      if (!history) return;
      const template = document.createElement("template");
      template.innerHTML = html;
      const nodes = Array.from(template.content.children);
      if (silentstar.scrollToBottom) silentstar.scrollToBottom();
      history.append(template.content);
      for (const node of nodes) {
        if (window.htmx) window.htmx.process(node);
        syncAnimations(node);
      }
      againOnNewestOnly();
      if (silentstar.scrollToBottom) silentstar.scrollToBottom();
    }

    async function send() {
      if (sending) return;
      if (imagePending) {
        try {
          await imagePending;
        } catch (_) {
          /* reported by takeImage */
        }
      }
      const message = serialise(input);
      if (!message && !image) return;

      if (messageField) messageField.value = message;
      const body = new FormData(form);
      const imageName = (imageInput && imageInput.name) || "image";
      body.delete(imageName);
      if (image) body.set(imageName, image.blob, image.name);
      if (messageField && messageField.name) body.set(messageField.name, message);

      sending = true;
      if (sendButton) sendButton.disabled = true;
      form.setAttribute("aria-busy", "true");
      showError(null);
      errorShownFor = null;
      // The input empties as the message goes, so what the person types next is theirs: it is
      // never wiped when the answer comes. Refused, the message comes back (see putBack).
      const sentNodes = Array.from(input.childNodes, (node) => node.cloneNode(true));
      const sentImage = image;
      input.replaceChildren();
      if (messageField) messageField.value = "";
      savedRange = null;
      setButtons(PLAIN);
      updateEmpty();

      function putBack() {
        const typedSince = Array.from(input.childNodes);
        input.replaceChildren(...sentNodes);
        if (typedSince.length) input.append(document.createElement("br"), ...typedSince);
        updateEmpty();
      }

      try {
        let response;
        try {
          response = await fetch(form.action || document.body.dataset.sendUrl || "/messages/", {
            method: "POST",
            body: body,
            credentials: "same-origin",
            headers: { "X-CSRFToken": csrfToken(), "HX-Request": "true" },
          });
        } catch (_) {
          putBack();
          showError("Could not reach Silentstar — check the connection. Your message is still here.");
          errorShownFor = serialise(input);
          return;
        }
        const text = await response.text().catch(() => "");
        if (response.redirected) {
          // POST /messages/ never redirects on success: this is the login page.
          putBack();
          showError("You have been logged out. Reload the page to log in again — your message is still here.");
          errorShownFor = serialise(input);
        } else if (response.status === 201 || response.ok) {
          if (image === sentImage) clearImage();
          showError(null);
          errorShownFor = null;
          appendToHistory(text);
          // Something has now been said: the set-up offer is for an installation without it.
          const offer = document.querySelector(".first-run-offer");
          if (offer) offer.remove();
          if (window.matchMedia && window.matchMedia("(pointer: fine)").matches) {
            input.focus({ preventScroll: true });
          }
        } else {
          putBack();
          showResponseError(text, response.status);
          errorShownFor = serialise(input);
        }
      } finally {
        sending = false;
        if (sendButton) sendButton.disabled = false;
        form.removeAttribute("aria-busy");
      }
    }

    silentstar.send = send;
    setButtons(PLAIN);
    updateEmpty();
  }
})();
