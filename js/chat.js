/**
 * The chat page's behaviour, without the DOM: the conversation, one turn at
 * a time, the token flow and the command hints.
 *
 * createChat({api, view, tokens, transcript, chatId}) drives a `view` (the
 * DOM in view.js, a recording fake in tests) through these calls:
 *   view.showChat()                  the token is known: show the chat
 *   view.showTokenForm(message)      ask for the token ("" or why)
 *   view.renderMessage(msg)          draw or redraw one message (by msg.id)
 *   view.setBusy(busy)               a turn is running: disable Send
 *   view.setStatus(text, tone)       tone: "ok" | "busy" | "error"
 *   view.setCommands(list)           the command list arrived
 *   view.clearMessages()             the visible conversation was cleared
 * and, when the view has them, the history calls of chat_history.js.
 * A message is described in conversation.js. The daemon's history is the
 * source of truth (chat_history.js); sessionStorage only paints the first
 * frame. Stop cancels on the daemon (POST /api/chat/stop) and keeps the
 * partial answer, marked; a message sent right after waits for that.
 */

import { ApiError } from "./api.js";
import { createBranching } from "./chat_branch.js";
import { createHistory } from "./chat_history.js";
import { createLoader, REFUSED } from "./chat_load.js";
import { completeCommand, matchCommands } from "./commands.js";
import { createConversation, finalChanges } from "./conversation.js";
import { createProactive } from "./proactive.js";
import { applyProgress, busyStatus } from "./progress.js";

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
  const convo = createConversation({ view, transcript });
  let busy = false;
  let controller = null;
  let stopping = null;
  let signedIn = false;
  let listener = null;
  let model = "";
  const history = createHistory({ api, chatId, convo, view, follow });
  const canRun = () => !busy && signedIn && !history.readOnly;
  const branching = createBranching({ api, chatId, convo, history, follow, canRun, view });

  function setBusy(value) {
    busy = value;
    view.setBusy(value);
  }

  const ready = () => `Ready${model ? ` · ${model}` : ""}`;

  function signOut(reason) {
    if (listener) listener.stop();
    tokens.clear();
    signedIn = false;
    loader.clear();
    view.showTokenForm(reason);
    view.setStatus("Not signed in", "error");
  }

  const refused = (err) => err instanceof ApiError && err.kind === "unauthorized";
  const loader = createLoader({ api, view, chatId, isIdle: () => !busy && signedIn, onRefused: signOut });

  async function loadHistory() {
    try {
      await history.load();
    } catch (err) {
      if (refused(err)) signOut(REFUSED);
    }
  }

  /** Proactive messages (reminders, jobs): missed ones now, pushed ones while open. */
  function listen(lastSeen) {
    if (listener || typeof api.events !== "function" || typeof api.missed !== "function") return;
    listener = createProactive({
      api,
      chatId,
      lastSeen,
      show: (m) => {
        convo.add({ role: "assistant", text: m.text, kind: "proactive", outboxId: m.id });
        convo.save();
      },
    });
    listener.start().finally(() => {
      listener = null;
    });
  }

  async function enter() {
    signedIn = true;
    view.showChat();
    view.setStatus(`Chat “${chatId}”`, "ok");
    const lastSeen = convo.lastSeenOutbox();
    await Promise.all([loader.commands(), loader.health(), loader.status(), loadHistory()]);
    if (signedIn) listen(lastSeen);
  }

  /** Show the stored conversation and the chat, or the token form. */
  async function start({ hashToken = null } = {}) {
    convo.restore();
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

  /** The token form was submitted (or a #token= link was opened). Returns false when `raw` is no token. */
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
   * Run one turn, with the ids of uploaded files (`ids`; `sent` describes them for
   * the person's message: {name, kind, mime, size, blob}). Resolves to false when
   * nothing was sent (empty, too long, a turn already running, not signed in,
   * reading a past conversation), true otherwise (even on error: the error is
   * shown inline on the reply).
   */
  async function send(rawText, { ids = [], sent = [] } = {}) {
    const text = typeof rawText === "string" ? rawText.trim() : "";
    if ((!text && !ids.length) || !canRun()) return false;
    if (text.length > MAX_INPUT) {
      view.setStatus(`The message is too long (${text.length} > ${MAX_INPUT} characters)`, "error");
      return false;
    }
    convo.add({ role: "user", text, ...(sent.length ? { sent } : {}) });
    return runTurn(text, ids);
  }

  async function runTurn(text, attachments = []) {
    const reply = convo.add({ role: "assistant", text: "", status: "pending", tools: [] });
    reply.request = text;
    const extra = attachments.length ? { attachments } : {}; // upload ids (attach.js)
    await follow(reply, (handlers) => api.streamChat(text, { chat: chatId, ...extra, ...handlers }));
    if (reply.status === "done" || reply.status === "stopped") await history.sync(); // seqs: Edit, another answer
    return true;
  }

  /**
   * Follow one answer into `reply`: a turn this page started, or one it
   * re-attached to. `runner(handlers)` resolves to the final reply, or null
   * when there was nothing to follow.
   */
  async function follow(reply, runner) {
    setBusy(true);
    view.setStatus(busyStatus(reply, model), "busy");
    controller = typeof AbortController === "function" ? new AbortController() : null;
    let result = null;
    try {
      result = await runner({
        signal: controller?.signal,
        onDelta: (_piece, soFar) => {
          convo.update(reply, { text: soFar, status: "streaming", notice: "" });
          view.setStatus(busyStatus(reply, model), "busy");
        },
        onProgress: (ev) => {
          const { model: name, ...changes } = applyProgress(reply, ev);
          if (name) model = name;
          convo.update(reply, changes);
          view.setStatus(busyStatus(reply, model), "busy");
        },
      });
      if (result !== null) {
        const { changes, status } = finalChanges(result, ready());
        convo.update(reply, changes);
        view.setStatus(...status);
      }
    } catch (err) {
      failed(reply, err);
    } finally {
      if (stopping) await stopping; // the daemon confirms the stop before the next message
      controller = null;
      setBusy(false);
      convo.save();
    }
    return result;
  }

  function failed(reply, err) {
    const e = err instanceof ApiError ? err : new ApiError(String(err?.message ?? err), { kind: "protocol" });
    const shown = e.partial || reply.text;
    if (e.kind === "unauthorized") {
      convo.update(reply, { text: shown, status: "failed", notice: "", error: "Not sent: the access token was refused." });
      signOut("The daemon refused the access token (it may have changed). Paste the current one.");
    } else if (e.kind === "aborted") {
      convo.update(reply, { text: shown, status: "stopped", notice: "", error: "" });
      view.setStatus("Stopped", "ok");
    } else {
      convo.update(reply, { text: shown, status: "failed", notice: "", error: e.message });
      view.setStatus(e.kind === "network" ? "Connection problem" : "The turn failed", "error");
    }
  }

  /** Send again the message whose reply `replyId` failed or was stopped. */
  async function retry(replyId) {
    const list = convo.list;
    const reply = list.find((m) => m.id === replyId);
    const idx = list.indexOf(reply);
    const request = reply?.request ?? (idx > 0 && list[idx - 1].role === "user" ? list[idx - 1].text : null);
    if (!reply || !["failed", "stopped"].includes(reply.status) || !request || busy || !signedIn || history.readOnly) {
      return false;
    }
    convo.add({ role: "user", text: request });
    return runTurn(request);
  }

  /** Stop the running turn on the daemon (POST /api/chat/stop) and here. Resolves to the daemon's answer. */
  async function stop() {
    if (!busy) return false;
    if (stopping) return stopping;
    const stopChat = typeof api.stopChat === "function" ? api.stopChat({ chat: chatId }) : Promise.resolve(false);
    stopping = stopChat.catch(() => false); // an old daemon (404): stopping here is all there is
    view.setStatus("Stopping…", "busy");
    controller?.abort();
    const stopped = await stopping;
    stopping = null;
    return stopped;
  }

  /** A new conversation: the daemon forgets the context; the old one stays readable. */
  async function newChat() {
    if (!signedIn) return false;
    if (busy) await stop();
    try {
      await history.newChat();
    } catch (err) {
      if (refused(err)) signOut("The daemon refused the access token (it may have changed). Paste the current one.");
      else view.setStatus(`Could not start a new chat: ${err.message}`, "error");
      return false;
    }
    view.setStatus("New chat: roost starts without the earlier messages", "ok");
    return true;
  }

  return {
    start,
    submitToken,
    send,
    retry,
    stop,
    newChat,
    edit: (id, text) => branching.edit(id, text),
    regenerate: (id) => branching.regenerate(id),
    switchVersion: (id, index) => branching.switchVersion(id, index),
    renameConversation: (id, title) => history.rename(id, title),
    deleteConversation: (id) => history.remove(id),
    searchConversations: (q) => history.search(q),
    thumbnail: (msg, index) => history.thumbnail(msg, index),
    loadEarlier: () => history.loadEarlier(),
    conversations: () => history.conversations(),
    openConversation: (id, title) => (busy ? Promise.resolve(false) : history.open(id, title)),
    backToCurrent: () => history.backToCurrent(),
    stopListening: () => listener?.stop(),
    hints: (input) => matchCommands(input, loader.list),
    complete: (input) => completeCommand(input, loader.list),
    get busy() {
      return busy;
    },
    get messages() {
      return convo.list.slice();
    },
    get readOnly() {
      return history.readOnly;
    },
    get canEdit() {
      return canRun() && history.supported !== false;
    },
    get attaching() {
      return history.attaching;
    },
    get commands() {
      return loader.list.slice();
    },
  };
}
