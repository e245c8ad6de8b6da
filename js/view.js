/**
 * The conversation's DOM: one <article> per message (who, the files sent,
 * tool cards, the rendered body with a head on code blocks, a notice line,
 * an error with Retry, file links and players, the Edit / another answer /
 * versions row), drawn by the calls chat.js makes on its view.
 *
 * createMessagesView(win, els, actions) returns {renderMessage, clearMessages,
 * setRenderer, isEmpty}; `actions`: retry(id), send(command), render(text),
 * and when the page offers them edit(id, text), regenerate(id),
 * version(id, index), thumb(msg, index) (a sent image's thumbnail). Streamed
 * text is drawn once per animation frame. Assistant text goes through
 * `render` (markdown.js: sanitised HTML); user text is only ever set as
 * textContent. The emoji roost's messages use become inline SVG icons
 * (icons.js); code blocks name their language; a spoken answer gets a
 * player (speech.js), the files a person sent chips with thumbnails.
 */

import { actionButtons } from "./actions.js";
import { iconize, icon } from "./icons.js";
import { toolSummary } from "./progress.js";
import { isSpoken, speechPlayer } from "./speech.js";
import { sentChips } from "./thumbs.js";
import { decorateCode, editForm, messageTools } from "./view_parts.js";

const NEAR_BOTTOM_PX = 96;

/** A download link for one file of a reply (one-time: it works once, for ten minutes). */
function fileLink(document, file) {
  const link = document.createElement("a");
  link.href = file.url;
  link.download = file.name;
  const kb = Math.max(1, Math.round(file.size / 1024));
  const label = document.createElement("span");
  label.textContent = `${file.name} (${kb.toLocaleString()} KB, download once)`;
  link.append(icon(document, "paperclip"), label);
  return link;
}

function el(document, tag, className, text) {
  const e = document.createElement(tag);
  if (className) e.className = className;
  if (text !== undefined) e.textContent = text;
  return e;
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
      who: el(document, "div", "who", msg.role === "user" ? "You" : msg.kind === "proactive" ? "roost · scheduled" : "roost"),
      sent: el(document, "ul", "chips sent-files"),
      tools: el(document, "div", "tools"),
      body: el(document, "div", "body"),
      notice: el(document, "div", "notice"),
      files: el(document, "div", "files"),
      buttons: el(document, "div", "actions"), // one-tap actions (actions.js)
      row: el(document, "div", "msg-tools"),
      cards: new Map(),
      players: new Map(), // spoken answers by link: each link works once
      editing: false,
      error,
      errorText,
      retry,
    };
    n.sent.setAttribute("aria-label", "Files sent");
    root.append(n.who, n.sent, n.tools, n.body, n.notice, error, n.files, n.buttons, n.row);
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

  function drawBody(n, msg) {
    if (n.editing) {
      n.body.replaceChildren(editForm(document, msg, {
        save: async (text) => {
          n.editing = false;
          if (!(await actions.edit(msg.id, text))) draw(msg); // unchanged or not possible
        },
        cancel: () => {
          n.editing = false;
          draw(msg);
        },
      }));
      n.body.querySelector?.("textarea")?.focus();
      return;
    }
    if (msg.role === "user") {
      n.body.textContent = msg.text; // never parsed: shown exactly as typed
      n.body.hidden = !msg.text && Boolean(msg.sent?.length);
    } else {
      n.body.innerHTML = render(msg.text); // sanitised (markdown.js) or escaped (render.js)
      decorateCode(win, n.body);
    }
    iconize(document, n.body);
  }

  function drawFiles(n, msg) {
    n.files.replaceChildren(
      ...(msg.files || []).map((file) => {
        if (!isSpoken(file)) return fileLink(document, file);
        if (!n.players.has(file.url)) n.players.set(file.url, speechPlayer(win, file));
        return n.players.get(file.url);
      }),
    );
    if (n.shownSent !== msg.sent) n.sent.replaceChildren(...sentChips(win, msg.sent, { thumb: (_f, i) => actions.thumb?.(msg, i) }));
    n.shownSent = msg.sent;
    n.sent.hidden = !msg.sent?.length;
  }

  function draw(msg) {
    const stick = nearBottom() || (msg.role === "user" && !nodes.has(msg.id));
    const n = node(msg);
    shown.set(msg.id, msg);
    n.root.className = `msg ${msg.role} status-${msg.status}${msg.kind ? ` kind-${msg.kind}` : ""}`;
    drawBody(n, msg);
    drawTools(n, msg.tools);
    n.notice.textContent = msg.notice || "";
    n.notice.hidden = !msg.notice;
    iconize(document, n.notice);
    drawFiles(n, msg);
    if (n.shownActions !== msg.actions) n.buttons.replaceChildren(...actionButtons(document, msg.actions, actions.send, msg.settled));
    n.shownActions = msg.actions;
    const row = messageTools(document, msg, { ...actions, startEdit: () => {
      n.editing = true;
      draw(msg);
    } });
    n.row.replaceWith(row);
    n.row = row;
    n.row.hidden = n.row.hidden || n.editing;
    n.root.setAttribute("aria-busy", String(msg.status === "pending" || msg.status === "streaming"));
    drawError(n, msg);
    iconize(document, n.errorText);
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
