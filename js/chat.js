/**
 * The chat page's behaviour, without the DOM: the conversation, one turn at
 * a time, the token flow and the command hints.
 *
 * createChat({api, view, tokens, transcript, chatId}) drives a `view` (the
 * DOM in app.js, a recording fake in tests) through these calls:
 *   view.showChat()                  the token is known: show the chat
 *   view.showTokenForm(message)      ask for the token ("" or why)
 *   view.renderMessage(msg)          draw or redraw one message (by msg.id)
 *   view.setBusy(busy)               a turn is running: disable Send
 *   view.setStatus(text, tone)       tone: "ok" | "busy" | "error"
 *   view.setCommands(list)           the command list arrived
 *   view.clearMessages()             the visible conversation was cleared
 * A message is {id, role: "user"|"assistant", text, kind, status, error}
 * with status "done" | "pending" | "streaming" | "failed".
 */

import { ApiError } from "./api.js";
import { completeCommand, matchCommands, normalizeCommands } from "./commands.js";
import { createProactive } from "./proactive.js";

const MAX_INPUT = 16000;
const CHAT_RE = /^[A-Za-z0-9_-]{1,64}$/;

/** The chat name from the page's query string (?chat=work), else "default". */
export function chatIdFromSearch(search) {
  let value = null;
  try {
    value = new URLSearchParams(search || "").get("chat");
  } catch {
    value = null;
  }
  return value && CHAT_RE.test(value) ? value : "default";
}

export function createChat({ api, view, tokens, transcript = null, chatId = "default" }) {
  let messages = [];
  let nextId = 1;
  let busy = false;
  let controller = null;
  let commands = [];
  let signedIn = false;
  let listener = null;

  function save() {
    if (transcript) transcript.save(messages.filter((m) => m.status !== "pending"));
  }

  function add(msg) {
    const full = { id: nextId++, kind: "", status: "done", error: "", ...msg };
    messages.push(full);
    view.renderMessage(full);
    return full;
  }

  function update(msg, changes) {
    Object.assign(msg, changes);
    view.renderMessage(msg);
  }

  function setBusy(value) {
    busy = value;
    view.setBusy(value);
  }

  function signOut(reason) {
    if (listener) listener.stop();
    tokens.clear();
    signedIn = false;
    commands = [];
    view.setCommands([]);
    view.showTokenForm(reason);
    view.setStatus("Not signed in", "error");
  }

  async function loadCommands() {
    try {
      commands = normalizeCommands(await api.commands());
      view.setCommands(commands);
    } catch (err) {
      if (err instanceof ApiError && err.kind === "unauthorized") {
        signOut("The daemon refused the stored token. Paste the current one.");
      }
      // Otherwise hints are a convenience: the chat works without them.
    }
  }

  async function checkHealth() {
    const ok = await api.health();
    if (!busy && signedIn) {
      view.setStatus(ok ? `Connected · chat “${chatId}”` : "The daemon is not answering", ok ? "ok" : "error");
    }
    return ok;
  }

  /** Proactive messages (reminders, jobs): missed ones now, pushed ones while open. */
  function listen() {
    if (listener || typeof api.events !== "function" || typeof api.missed !== "function") return;
    const lastSeen = messages.reduce((n, m) => Math.max(n, m.outboxId || 0), 0);
    listener = createProactive({
      api,
      chatId,
      lastSeen,
      show: (m) => {
        add({ role: "assistant", text: m.text, kind: "proactive", outboxId: m.id });
        save();
      },
    });
    listener.start().finally(() => {
      listener = null;
    });
  }

  function enter() {
    signedIn = true;
    view.showChat();
    view.setStatus(`Chat “${chatId}”`, "ok");
    listen();
    return Promise.all([loadCommands(), checkHealth()]);
  }

  /** Show the stored conversation and the chat, or the token form. */
  async function start({ hashToken = null } = {}) {
    if (transcript) {
      messages = transcript.load().map((m) =>
        m.status === "pending" || m.status === "streaming"
          ? { ...m, status: "failed", error: m.error || "interrupted by a page reload" }
          : m,
      );
      nextId = messages.reduce((n, m) => Math.max(n, m.id + 1), 1);
      for (const m of messages) view.renderMessage(m);
    }
    if (hashToken) {
      try {
        tokens.set(hashToken);
      } catch {
        // an unusable token in the link: fall back to the stored one or the form
      }
    }
    if (!tokens.get()) {
      view.showTokenForm("");
      view.setStatus("Not signed in", "error");
      return;
    }
    await enter();
  }

  /** The token form was submitted. Returns false when `raw` is no token. */
  async function submitToken(raw) {
    try {
      tokens.set(raw);
    } catch {
      view.showTokenForm("That does not look like a token: paste the value after #token= in the daemon's start-up line.");
      return false;
    }
    await enter();
    return true;
  }

  /**
   * Run one turn. Resolves to false when nothing was sent (empty, too long,
   * a turn already running, not signed in), true otherwise (even on error:
   * the error is shown inline on the reply).
   */
  async function send(rawText) {
    const text = typeof rawText === "string" ? rawText.trim() : "";
    if (!text || busy || !signedIn) return false;
    if (text.length > MAX_INPUT) {
      view.setStatus(`The message is too long (${text.length} > ${MAX_INPUT} characters)`, "error");
      return false;
    }
    add({ role: "user", text });
    return runTurn(text);
  }

  async function runTurn(text) {
    const reply = add({ role: "assistant", text: "", status: "pending" });
    reply.request = text;
    setBusy(true);
    view.setStatus("Thinking…", "busy");
    controller = typeof AbortController === "function" ? new AbortController() : null;
    try {
      const result = await api.streamChat(text, {
        chat: chatId,
        signal: controller?.signal,
        onDelta: (_piece, soFar) => {
          if (reply.status === "pending") view.setStatus("Answering…", "busy");
          update(reply, { text: soFar, status: "streaming" });
        },
      });
      update(reply, { text: result.text, kind: result.kind, files: result.files, actions: result.actions, status: "done", error: "" });
      view.setStatus(result.kind === "error" ? "The daemon reported an error" : "Ready", result.kind === "error" ? "error" : "ok");
    } catch (err) {
      const e = err instanceof ApiError ? err : new ApiError(String(err?.message ?? err), { kind: "protocol" });
      const shown = e.partial || reply.text;
      if (e.kind === "unauthorized") {
        update(reply, { text: shown, status: "failed", error: "Not sent: the access token was refused." });
        signOut("The daemon refused the access token (it may have changed). Paste the current one.");
      } else if (e.kind === "aborted") {
        update(reply, { text: shown, status: "failed", error: "Stopped." });
        view.setStatus("Stopped", "ok");
      } else {
        update(reply, { text: shown, status: "failed", error: e.message });
        view.setStatus(e.kind === "network" ? "Connection problem" : "The turn failed", "error");
      }
    } finally {
      controller = null;
      setBusy(false);
      save();
    }
    return true;
  }

  /** Send again the message whose reply `replyId` failed. */
  async function retry(replyId) {
    const reply = messages.find((m) => m.id === replyId);
    const idx = messages.indexOf(reply);
    const request = reply?.request ?? (idx > 0 && messages[idx - 1].role === "user" ? messages[idx - 1].text : null);
    if (!reply || reply.status !== "failed" || !request || busy || !signedIn) return false;
    add({ role: "user", text: request });
    return runTurn(request);
  }

  /** Stop the running turn (the daemon may still finish it). */
  function stop() {
    if (controller) controller.abort();
  }

  /** Forget the visible conversation (the daemon's session is untouched). */
  function clear() {
    if (busy) return false;
    messages = [];
    if (transcript) transcript.clear();
    view.clearMessages();
    return true;
  }

  return {
    start,
    submitToken,
    send,
    retry,
    stop,
    clear,
    stopListening: () => listener?.stop(),
    hints: (input) => matchCommands(input, commands),
    complete: (input) => completeCommand(input, commands),
    get busy() {
      return busy;
    },
    get messages() {
      return messages.slice();
    },
  };
}
