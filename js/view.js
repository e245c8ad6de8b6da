/**
 * The conversation's DOM: one <article> per message (who, tool cards, the
 * rendered body with copy buttons on code blocks, a notice line, an error
 * with Retry, file links), drawn by the calls chat.js makes on its view.
 *
 * createMessagesView(win, els, {retry, render}) returns {renderMessage,
 * clearMessages, setRenderer, isEmpty}. Streamed text is drawn once per
 * animation frame. Assistant text goes through `render` (markdown.js:
 * sanitised HTML); user text is only ever set as textContent.
 */

import { actionButtons } from "./actions.js";
import { toolSummary } from "./progress.js";

const NEAR_BOTTOM_PX = 96;
const COPIED_MS = 1500;

/** A download link for one file of a reply (one-time: it works once, for ten minutes). */
function fileLink(document, file) {
  const link = document.createElement("a");
  link.href = file.url;
  link.download = file.name;
  const kb = Math.max(1, Math.round(file.size / 1024));
  link.textContent = `📎 ${file.name} (${kb.toLocaleString()} KB, download once)`;
  return link;
}

function el(document, tag, className, text) {
  const e = document.createElement(tag);
  if (className) e.className = className;
  if (text !== undefined) e.textContent = text;
  return e;
}

/** Put text on the clipboard; resolves to true when it worked. */
async function copyText(win, text) {
  try {
    await win.navigator.clipboard.writeText(text);
    return true;
  } catch {
    return false;
  }
}

/** A Copy button on each code block of `body` (rendered HTML is replaced on every draw). */
function addCopyButtons(win, body) {
  if (typeof body.querySelectorAll !== "function") return;
  for (const pre of body.querySelectorAll("pre")) {
    const button = el(win.document, "button", "copy", "Copy");
    button.type = "button";
    button.setAttribute("aria-label", "Copy the code");
    button.addEventListener("click", async () => {
      const ok = await copyText(win, pre.querySelector("code")?.textContent ?? pre.textContent);
      button.textContent = ok ? "Copied" : "Select and copy";
      win.setTimeout(() => (button.textContent = "Copy"), COPIED_MS);
    });
    pre.prepend(button);
  }
}

/** One tool card: <details> kept across redraws so an opened card stays open. */
function drawTool(document, card, tool) {
  if (!card.details) {
    card.details = el(document, "details", "tool");
    card.summary = el(document, "summary");
    card.args = el(document, "pre", "tool-args");
    card.resultLabel = el(document, "div", "tool-label");
    card.result = el(document, "pre", "tool-result");
    card.details.append(card.summary, el(document, "div", "tool-label", "Arguments"), card.args, card.resultLabel, card.result);
  }
  card.details.className = `tool state-${tool.state}`;
  card.summary.textContent = toolSummary(tool);
  card.args.textContent = tool.args || "(none)";
  const done = tool.state !== "start";
  card.resultLabel.hidden = !done;
  card.result.hidden = !done;
  card.resultLabel.textContent = tool.state === "error" ? "Error" : "Result";
  card.result.textContent = tool.result || "(empty)";
  return card.details;
}

export function createMessagesView(win, els, actions) {
  const { document } = win;
  const nodes = new Map(); // message id -> parts
  const dirty = new Map(); // streaming messages waiting for the next frame
  const shown = new Map(); // message id -> message, to redraw with a new renderer
  let render = actions.render;
  let frame = 0;

  const nearBottom = () => els.log.scrollHeight - els.log.scrollTop - els.log.clientHeight < NEAR_BOTTOM_PX;
  const toBottom = () => {
    els.log.scrollTop = els.log.scrollHeight;
  };

  function node(msg) {
    let n = nodes.get(msg.id);
    if (n) return n;
    const root = el(document, "article");
    const error = el(document, "div", "error");
    const errorText = el(document, "span");
    const retry = el(document, "button", "retry", "Retry");
    retry.type = "button";
    retry.addEventListener("click", () => actions.retry(msg.id));
    error.append(errorText, retry);
    n = {
      root,
      who: el(document, "div", "who", msg.role === "user" ? "You" : "roost"),
      tools: el(document, "div", "tools"),
      body: el(document, "div", "body"),
      notice: el(document, "div", "notice"),
      files: el(document, "div", "files"),
      buttons: el(document, "div", "actions"), // one-tap actions (actions.js)
      cards: new Map(),
      error,
      errorText,
      retry,
    };
    root.append(n.who, n.tools, n.body, n.notice, error, n.files, n.buttons);
    els.messages.append(root);
    nodes.set(msg.id, n);
    els.welcome.hidden = true;
    return n;
  }

  function drawTools(n, tools) {
    const list = (tools || []).map((t) => {
      if (!n.cards.has(t.id)) n.cards.set(t.id, {});
      return drawTool(document, n.cards.get(t.id), t);
    });
    n.tools.replaceChildren(...list);
    n.tools.hidden = list.length === 0;
  }

  function drawError(n, msg) {
    const stopped = msg.status === "stopped";
    n.error.hidden = msg.status !== "failed" && !stopped;
    n.error.classList.toggle("stopped", stopped);
    n.errorText.textContent = stopped ? "Stopped — the answer was cut here." : msg.error || "";
    n.retry.hidden = msg.role !== "assistant";
  }

  function draw(msg) {
    const stick = nearBottom() || (msg.role === "user" && !nodes.has(msg.id));
    const n = node(msg);
    shown.set(msg.id, msg);
    n.root.className = `msg ${msg.role} status-${msg.status}${msg.kind ? ` kind-${msg.kind}` : ""}`;
    if (msg.role === "user") {
      n.body.textContent = msg.text; // never parsed: shown exactly as typed
    } else {
      n.body.innerHTML = render(msg.text); // sanitised (markdown.js) or escaped (render.js)
      addCopyButtons(win, n.body);
    }
    drawTools(n, msg.tools);
    n.notice.textContent = msg.notice || "";
    n.notice.hidden = !msg.notice;
    n.files.replaceChildren(...(msg.files || []).map((file) => fileLink(document, file)));
    if (n.shownActions !== msg.actions) n.buttons.replaceChildren(...actionButtons(document, msg.actions, actions.send));
    n.shownActions = msg.actions;
    n.root.setAttribute("aria-busy", String(msg.status === "pending" || msg.status === "streaming"));
    drawError(n, msg);
    if (stick) toBottom();
  }

  function flush() {
    frame = 0;
    for (const msg of dirty.values()) draw(msg);
    dirty.clear();
  }

  return {
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
      shown.clear();
      els.messages.replaceChildren();
      els.welcome.hidden = false;
    },
    /** Use another renderer (the rich one, once loaded) and redraw the replies. */
    setRenderer(fn) {
      render = fn;
      for (const msg of shown.values()) if (msg.role === "assistant") draw(msg);
    },
    isEmpty: () => nodes.size === 0,
  };
}
