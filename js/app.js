/**
 * DOM glue of the chat page: builds the view that chat.js drives and wires
 * the page's events to it. The behaviour lives in the pure modules; this file
 * only reads and writes the elements of index.html.
 *
 * startPage(win) runs the page in a window (the real one when loaded by the
 * browser; a small fake one in the node tests).
 */

import { actionButtons } from "./actions.js";
import { createApi } from "./api.js";
import { chatIdFromSearch, createChat } from "./chat.js";
import { renderMarkdown } from "./render.js";
import { createTokenStore, createTranscriptStore, tokenFromHash } from "./storage.js";

const MAX_HINTS = 8;
const NEAR_BOTTOM_PX = 96;

function createDomView(win, els, actions) {
  const document = win.document;
  const nodes = new Map(); // message id -> {root, body, error}
  const dirty = new Map(); // streaming messages waiting for the next frame
  let frame = 0;

  const nearBottom = () => els.log.scrollHeight - els.log.scrollTop - els.log.clientHeight < NEAR_BOTTOM_PX;
  const toBottom = () => {
    els.log.scrollTop = els.log.scrollHeight;
  };

  function node(msg) {
    let n = nodes.get(msg.id);
    if (n) return n;
    const root = document.createElement("article");
    const who = document.createElement("div");
    who.className = "who";
    who.textContent = msg.role === "user" ? "You" : "roost";
    const body = document.createElement("div");
    body.className = "body";
    const error = document.createElement("div");
    error.className = "error";
    error.hidden = true;
    const errorText = document.createElement("span");
    const retry = document.createElement("button");
    retry.type = "button";
    retry.className = "retry";
    retry.textContent = "Retry";
    retry.addEventListener("click", () => actions.retry(msg.id));
    error.append(errorText, retry);
    const files = document.createElement("div");
    files.className = "files";
    const buttons = document.createElement("div"); // one-tap actions (actions.js)
    buttons.className = "actions";
    root.append(who, body, error, files, buttons);
    els.log.append(root);
    n = { root, body, files, buttons, error, errorText, retry };
    nodes.set(msg.id, n);
    return n;
  }

  function draw(msg) {
    const stick = nearBottom() || (msg.role === "user" && !nodes.has(msg.id));
    const n = node(msg);
    n.root.className = `msg ${msg.role} status-${msg.status}${msg.kind ? ` kind-${msg.kind}` : ""}`;
    if (msg.role === "user") {
      n.body.textContent = msg.text; // never parsed: shown exactly as typed
    } else {
      n.body.innerHTML = renderMarkdown(msg.text); // escaped by renderMarkdown
    }
    n.files.replaceChildren(...(msg.files || []).map((file) => fileLink(document, file)));
    if (n.shownActions !== msg.actions) n.buttons.replaceChildren(...actionButtons(document, msg.actions, actions.send));
    n.shownActions = msg.actions;
    n.root.setAttribute("aria-busy", String(msg.status === "pending" || msg.status === "streaming"));
    n.error.hidden = msg.status !== "failed";
    n.errorText.textContent = msg.error || "";
    n.retry.hidden = msg.role !== "assistant";
    if (stick) toBottom();
  }

  function flush() {
    frame = 0;
    for (const msg of dirty.values()) draw(msg);
    dirty.clear();
  }

  return {
    showChat() {
      els.tokenView.hidden = true;
      els.composer.hidden = false;
      els.input.focus();
    },
    showTokenForm(message) {
      els.tokenMessage.textContent = message || "Paste the access token that the daemon printed when it started.";
      els.tokenMessage.classList.toggle("warn", Boolean(message));
      els.tokenView.hidden = false;
      els.composer.hidden = true;
      els.tokenInput.value = "";
      els.tokenInput.focus();
    },
    renderMessage(msg) {
      if (msg.status === "streaming") {
        dirty.set(msg.id, msg);
        if (!frame) frame = win.requestAnimationFrame(flush);
        return;
      }
      dirty.delete(msg.id);
      draw(msg);
    },
    clearMessages() {
      dirty.clear();
      nodes.clear();
      els.log.replaceChildren();
    },
    setBusy(busy) {
      els.send.disabled = busy;
      els.stop.hidden = !busy;
      els.log.setAttribute("aria-busy", String(busy));
    },
    setStatus(text, tone) {
      els.status.textContent = text;
      els.status.dataset.tone = tone;
    },
    setCommands() {
      actions.refreshHints();
    },
  };
}

function autosize(win, input) {
  input.style.height = "auto";
  input.style.height = `${Math.min(input.scrollHeight, Math.round(win.innerHeight * 0.4))}px`;
}

/**
 * Start the chat page in `win`. Returns the chat controller (for tests).
 * @param {Window} win
 */
/** A download link for one file of a reply (one-time: it works once, for ten minutes). */
function fileLink(document, file) {
  const link = document.createElement("a");
  link.href = file.url;
  link.download = file.name;
  const kb = Math.max(1, Math.round(file.size / 1024));
  link.textContent = `📎 ${file.name} (${kb.toLocaleString()} KB, download once)`;
  return link;
}

export function startPage(win) {
  const { document, location, history } = win;
  const $ = (id) => {
    const el = document.getElementById(id);
    if (!el) throw new Error(`index.html lacks #${id}`);
    return el;
  };
  const els = {
    log: $("log"),
    status: $("status"),
    clear: $("clear"),
    tokenView: $("token-view"),
    tokenForm: $("token-form"),
    tokenInput: $("token-input"),
    tokenMessage: $("token-message"),
    composer: $("composer"),
    hints: $("hints"),
    sendForm: $("send-form"),
    input: $("input"),
    send: $("send"),
    stop: $("stop"),
  };

  // Take the token out of the address bar before anything else.
  const { token: hashToken, rest } = tokenFromHash(location.hash);
  if (hashToken !== null || /(^#|&)token=/.test(location.hash)) {
    history.replaceState(null, "", location.pathname + location.search + rest);
  }

  const tokens = createTokenStore(win.localStorage);
  const api = createApi({ fetch: (url, init) => win.fetch(url, init), getToken: () => tokens.get() });
  let chat = null;

  function refreshHints() {
    const list = chat ? chat.hints(els.input.value) : [];
    els.hints.replaceChildren(
      ...list.slice(0, MAX_HINTS).map((c) => {
        const li = document.createElement("li");
        li.setAttribute("role", "option");
        const usage = document.createElement("code");
        usage.textContent = c.usage;
        const summary = document.createElement("span");
        summary.textContent = c.summary;
        li.append(usage, summary);
        li.addEventListener("mousedown", (e) => {
          e.preventDefault(); // keep the focus in the input
          els.input.value = `/${c.name} `;
          refreshHints();
          els.input.focus();
        });
        return li;
      }),
    );
    els.hints.hidden = list.length === 0;
  }

  const view = createDomView(win, els, {
    retry: (id) => chat.retry(id),
    send: (command) => chat.send(command),
    refreshHints,
  });
  chat = createChat({
    api,
    view,
    tokens,
    transcript: createTranscriptStore(win.sessionStorage),
    chatId: chatIdFromSearch(location.search),
  });

  async function sendInput() {
    const text = els.input.value;
    if (!text.trim() || chat.busy) return;
    els.input.value = "";
    autosize(win, els.input);
    refreshHints();
    const sent = await chat.send(text);
    if (!sent && !els.input.value) els.input.value = text; // give it back
    autosize(win, els.input);
  }

  els.sendForm.addEventListener("submit", (e) => {
    e.preventDefault();
    sendInput();
  });
  els.input.addEventListener("keydown", (e) => {
    if (e.isComposing || e.keyCode === 229) return; // an IME is composing
    if (e.key === "Enter" && !e.shiftKey && !e.altKey && !e.ctrlKey && !e.metaKey) {
      e.preventDefault();
      sendInput();
    } else if (e.key === "Tab" && !e.shiftKey && !els.hints.hidden) {
      const done = chat.complete(els.input.value);
      if (done !== null) {
        e.preventDefault();
        els.input.value = done;
        refreshHints();
      }
    } else if (e.key === "Escape") {
      if (!els.hints.hidden) els.hints.hidden = true;
      else if (chat.busy) chat.stop();
    }
  });
  els.input.addEventListener("input", () => {
    autosize(win, els.input);
    refreshHints();
  });
  els.stop.addEventListener("click", () => chat.stop());
  els.clear.addEventListener("click", () => {
    if (chat.clear()) els.input.focus();
  });
  els.tokenForm.addEventListener("submit", (e) => {
    e.preventDefault();
    chat.submitToken(els.tokenInput.value);
  });

  const ready = chat.start({ hashToken });
  return { chat, ready };
}

if (typeof window !== "undefined" && typeof document !== "undefined") startPage(window);
