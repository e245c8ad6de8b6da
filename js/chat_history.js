/**
 * The conversation as the daemon keeps it: history on load (paged back by
 * "load earlier"), re-attaching to an answer still running, a new chat, and
 * reading past conversations. No DOM.
 *
 * createHistory({api, chatId, convo, view, follow}) returns {load, sync,
 * loadEarlier, newChat, conversations, open, backToCurrent, rename, remove,
 * search, thumbnail, shown, readOnly, supported, attaching}. `follow(reply, runner)` is the chat controller's way to run
 * an attached answer like its own turns (busy state, deltas, stop).
 * View calls used: setMore(bool), setReadOnly(null | {id, title}),
 * showConversations(list), showResults(results | null, query), setStatus(text, tone).
 * A daemon without these routes (404) keeps the page's stored transcript.
 * On a reload while an answer runs, the question it answers (`pending`) is
 * shown above it; arrows between versions go where `placeVersions` puts them.
 */

import { ApiError } from "./api.js";
import { fromHistory, placeVersions } from "./conversation.js";

const PAGE = 50;
/** A message of a turn (the person's or its answer), not a proactive post nor a command. */
const isTurn = (m) => m.kind !== "proactive" && m.kind !== "command";
/** An answer the daemon keeps no place for: a failed turn, a refusal, one it said is `unstored`. */
const neverStored = (m) => m.role === "assistant" && (m.status === "failed" || m.kind === "refusal" || m.unstored === true);
/** `turns` without the ones never stored: each such answer and the person's message before it. */
function storedTurns(turns) {
  const out = [];
  for (const m of turns) {
    if (!neverStored(m)) out.push(m);
    else if (out.length && out[out.length - 1].role === "user" && !Number.isInteger(out[out.length - 1].seq)) out.pop();
  }
  return out;
}
const is404 = (err) => err instanceof ApiError && err.kind === "http" && err.status === 404;

export function createHistory({ api, chatId, convo, view, follow }) {
  let supported = typeof api.history === "function" ? null : false; // null: not asked yet
  let current = "";
  let readOnly = null; // {id, title} while reading a past conversation
  let more = false;
  let newestPost = 0; // the chat's newest outbox id the daemon named: the page listens after it
  let attaching = Promise.resolve(); // a re-attached answer, followed in the background

  function setMore(value) {
    more = value;
    view.setMore?.(value);
  }

  async function fetchPage(opts) {
    try {
      const page = await api.history({ chat: chatId, limit: PAGE, ...opts });
      supported = true;
      return page;
    } catch (err) {
      if (is404(err)) supported = false;
      else if (!(err instanceof ApiError && err.kind === "unauthorized")) {
        view.setStatus(`Could not load the history: ${err.message}`, "error");
      }
      if (err instanceof ApiError && err.kind === "unauthorized") throw err;
      return null;
    }
  }

  /** The current conversation from the daemon; re-attach when an answer runs. */
  async function load({ attach = true } = {}) {
    if (supported === false) return false;
    const page = await fetchPage({});
    if (!page) return false;
    current = page.conversation;
    if (Number.isInteger(page.newest_post)) newestPost = page.newest_post;
    convo.replace(placeVersions(page.messages.map(fromHistory)));
    setMore(page.more);
    if (page.running && attach && typeof api.attach === "function") {
      // the question being answered is not stored yet: show it above its answer
      if (page.pending) convo.add({ role: "user", text: page.pending.text, pending: true });
      attaching = reattach(Boolean(page.pending));
    }
    convo.save();
    return true;
  }

  /**
   * Give the newest messages their place in the daemon's history (`seq`), once a
   * turn is stored, so they can be edited or answered again; matched from the end.
   * A turn the daemon did not store (failed, refused, or an answer it said was
   * `unstored`: the offline one) has no place: it and the person's message before
   * it are left out, or the answer would take the place of the stored one before it
   * and "another answer" would answer that earlier question again. The person's
   * text may differ from the stored one (masked): the answer still takes its place.
   */
  async function sync() {
    if (supported !== true || readOnly) return;
    let page;
    try {
      page = await api.history({ chat: chatId, limit: 4 });
    } catch {
      return; // the buttons wait for the next load
    }
    if (current && page.conversation !== current) return;
    const theirs = placeVersions(page.messages.map(fromHistory)).filter((m) => Number.isInteger(m.seq));
    const ours = storedTurns(convo.list.filter(isTurn)); // posts and commands have no place among the turns
    for (let i = ours.length - 1, j = theirs.length - 1; i >= 0 && j >= 0; i--, j--) {
      const [a, b] = [ours[i], theirs[j]];
      if (a.role !== b.role || (a.role === "user" && a.text.trim() !== b.text.trim())) break;
      if (!Number.isInteger(a.seq)) convo.update(a, { seq: b.seq, ...(b.versions ? { versions: b.versions } : {}) });
    }
  }

  /** Follow the running answer; `asked`: its question is shown (without it, the answer
   * runs on another instance of the daemon: show both as stored once it ends). */
  async function reattach(asked) {
    const reply = convo.add({ role: "assistant", text: "", status: "pending" });
    const result = await follow(reply, (handlers) => api.attach({ chat: chatId, ...handlers }));
    if (result === null) convo.remove(reply); // it finished in between: show it as stored
    if (result === null || !asked) await load({ attach: false });
  }

  async function loadEarlier() {
    const before = convo.oldestSeq();
    if (!more || before === null) return false;
    const page = await fetchPage({ before, conversation: readOnly ? readOnly.id : current || undefined });
    if (!page) return false;
    convo.prepend(placeVersions(page.messages.map(fromHistory)));
    setMore(page.more);
    return true;
  }

  /** A real reset on the daemon; a daemon without the route gets the /reset command. */
  async function newChat() {
    let fallback = typeof api.newChat !== "function";
    if (!fallback) {
      try {
        current = await api.newChat({ chat: chatId });
      } catch (err) {
        if (!is404(err)) throw err;
        fallback = true;
      }
    }
    if (fallback) {
      const reply = await api.chat("/reset", { chat: chatId });
      if (reply.kind === "error") throw new ApiError(reply.text, { kind: "server" });
    }
    readOnly = null;
    view.setReadOnly?.(null);
    convo.clear();
    setMore(false);
    return true;
  }

  async function conversations() {
    if (typeof api.conversations !== "function") return [];
    try {
      const list = await api.conversations({ chat: chatId });
      view.showConversations?.(list);
      return list;
    } catch (err) {
      if (!is404(err)) view.setStatus(`Could not list the conversations: ${err.message}`, "error");
      view.showConversations?.([]);
      return [];
    }
  }

  /** Show a past conversation, read-only. */
  async function open(id, title = "") {
    if (!id || id === current) return backToCurrent();
    const page = await fetchPage({ conversation: id });
    if (!page) return false;
    readOnly = { id, title };
    convo.replace(placeVersions(page.messages.map(fromHistory)));
    setMore(page.more);
    view.setReadOnly?.(readOnly);
    return true;
  }

  /** Give conversation `id` a title of its own; the list is drawn again. */
  async function rename(id, title) {
    try {
      await api.renameConversation({ chat: chatId, conversation: id, title });
    } catch (err) {
      view.setStatus(`Could not rename: ${err.message}`, "error");
      return false;
    }
    if (readOnly && readOnly.id === id) readOnly = { id, title };
    view.setReadOnly?.(readOnly);
    await conversations();
    return true;
  }

  /** Delete conversation `id` (the current one: the daemon starts a new one). */
  async function remove(id) {
    let now;
    try {
      now = await api.deleteConversation({ chat: chatId, conversation: id });
    } catch (err) {
      view.setStatus(`Could not delete: ${err.message}`, "error");
      return false;
    }
    if (id === current || (readOnly && readOnly.id === id)) {
      current = now || current;
      readOnly = null;
      view.setReadOnly?.(null);
      convo.clear();
      setMore(false);
      await load({ attach: false });
    }
    await conversations();
    return true;
  }

  /** Conversations holding `q`; the view shows them in place of the list. */
  async function search(q) {
    if (!q.trim()) {
      view.showResults?.(null);
      return conversations();
    }
    try {
      const results = await api.searchConversations({ chat: chatId, q });
      view.showResults?.(results, q);
      return results;
    } catch (err) {
      view.setStatus(`Could not search: ${err.message}`, "error");
      return [];
    }
  }

  /** The thumbnail (a Blob, or null) of the `index`th file the person sent with `msg`. */
  async function thumbnail(msg, index) {
    if (!Number.isInteger(msg.seq) || typeof api.thumbnail !== "function") return null;
    const conversation = readOnly ? readOnly.id : undefined;
    try {
      return await api.thumbnail({ chat: chatId, conversation, seq: msg.seq, file: index });
    } catch {
      return null;
    }
  }

  async function backToCurrent() {
    readOnly = null;
    view.setReadOnly?.(null);
    return load({ attach: true });
  }

  return {
    load,
    sync,
    loadEarlier,
    /** The conversation shown: its id while reading a past one, else the current one's. */
    get shown() {
      return readOnly ? readOnly.id : current;
    },
    newChat,
    conversations,
    open,
    backToCurrent,
    rename,
    remove,
    search,
    thumbnail,
    get readOnly() {
      return readOnly;
    },
    get supported() {
      return supported;
    },
    get attaching() {
      return attaching;
    },
    /** The newest outbox id of the chat as the last load named it (0: none named). */
    get newestPost() {
      return newestPost;
    },
  };
}
