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
 *   view.setAccount(tenant)          who is signed in (null: not known)
 *   view.confirmSwitch({from, to})   a #token= link names another account than
 *                                    the stored, working token: resolves to true
 *                                    to switch (from/to: tenants, null if unknown)
 *   view.showAccountChanged({to, signedOut})  another tab signed this browser
 *                                    in as someone else (or out): this tab stops
 *   view.reload()                    start the page afresh (a switch while open)
 * and, when the view has them, the history calls of chat_history.js.
 *
 * The token flow: the tab keeps the token it signed in with in memory
 * (`chat.token`, what every request sends), not what localStorage holds now.
 * A #token= link (`openLink`) is used as is when nothing is stored; a link
 * whose token differs from a stored, working one is adopted only once the
 * person confirms; a link token the daemon refuses keeps the stored one.
 * When another tab changes the stored token (`storedTokenChanged`), this tab
 * stops sending and says so; it goes on as the new account only after a
 * reload the person asks for.
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
import { cleanToken, tokenKey } from "./storage.js";

const REFUSED_TOKEN = Symbol("refused");
const CHAT_RE = /^[A-Za-z0-9_-]{1,64}$/; // the daemon's CHAT_PATTERN (bridge/channels/web)
export const CHAT_MAX = 64;
export const CHAT_RULE = `A chat name is 1 to ${CHAT_MAX} characters: the letters A–Z and a–z, the digits 0–9, “_” and “-” (no spaces, dots or accented letters).`;

/**
 * The chat the page's query string names: {id, asked}. No ?chat= (or an empty
 * one): {id: "default", asked: null}. A valid name: {id: name, asked: name}. A
 * name the daemon would refuse (outside [A-Za-z0-9_-]{1,64}): {id: null,
 * asked: name}: the page opens no chat then (never the default one instead).
 */
export function chatFromSearch(search) {
  let value = null;
  try {
    value = new URLSearchParams(search || "").get("chat");
  } catch {
    value = null;
  }
  if (!value) return { id: "default", asked: null };
  return { id: CHAT_RE.test(value) ? value : null, asked: value };
}

/**
 * A valid chat name close to `name` ("Einkäufe" → "Einkaufe", "my list" →
 * "my-list", "work.notes" → "work-notes"), or null when nothing is left.
 */
export function suggestChatName(name) {
  const plain = String(name ?? "")
    .normalize("NFKD")
    .replace(/[\u0300-\u036f]/g, "") // accents off their letters
    .replace(/ß/g, "ss")
    .replace(/[^A-Za-z0-9_-]+/g, "-")
    .replace(/^-+|-+$/g, "")
    .slice(0, CHAT_MAX)
    .replace(/-+$/, "");
  return plain && CHAT_RE.test(plain) ? plain : null;
}

/** How many characters the daemon counts in `text`: code points (Python's len), not UTF-16 units. */
export function charCount(text) {
  let n = 0;
  for (const _ of String(text)) n += 1;
  return n;
}

/** The person's line for a message over the daemon's `limit` (characters, counted by charCount). */
export function tooLong(count, limit) {
  const n = (x) => x.toLocaleString("en-US");
  return `The message is too long: ${n(count)} characters, this roost takes at most ${n(limit)} ([limits] max_message_chars). Shorten it or send it in parts.`;
}

const TENANT_RE = /^[A-Za-z0-9_.:@-]{1,64}$/;
const refusedError = () => new ApiError("the access token was refused", { kind: "unauthorized", status: 401 });

/**
 * whoami(token) for createChat: the tenant of `token` by GET /api/status (its
 * `tenant`), null when the daemon does not say; rejects with an unauthorized
 * ApiError when the daemon refuses the token. An older daemon without
 * /api/status (404) is asked GET /api/commands, only to tell a refused token.
 */
export function createWhoami(fetchFn, chatId = "default") {
  const ask = (path, token) =>
    fetchFn(path, { method: "GET", headers: { Accept: "application/json", Authorization: `Bearer ${token}` }, cache: "no-store" });
  return async (token) => {
    const res = await ask(`/api/status?chat=${encodeURIComponent(chatId)}`, token);
    if (res.status === 401) throw refusedError();
    if (res.status === 404) {
      const old = await ask("/api/commands", token);
      if (old.status === 401) throw refusedError();
      return null;
    }
    if (!res.ok) return null;
    let body = null;
    try {
      body = await res.json();
    } catch {
      return null;
    }
    const tenant = body && typeof body.tenant === "string" ? body.tenant : null;
    return tenant && TENANT_RE.test(tenant) ? tenant : null;
  };
}

export function createChat({ api, view, tokens, whoami = null, transcript = null, chatId = "default" }) {
  const convo = createConversation({ view, transcript });
  let active = null; // the token this tab signed in with: every request sends it
  let tenant = null; // whose it is, when the daemon said
  let changedElsewhere = false; // another tab changed the stored token: this one stops
  let notice = null; // [text, tone] shown once signed in: why a link's token was not taken
  let busy = false;
  let controller = null;
  let stopping = null;
  let signedIn = false;
  let shownFor = null; // tokenKey of the account whose conversation is shown
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
    if (tokens.get() === active) tokens.clear(); // not another tab's newer token
    active = null;
    tenant = null;
    view.setAccount?.(null);
    signedIn = false;
    loader.clear();
    view.showTokenForm(reason);
    view.setStatus("Not signed in", "error");
  }

  const refused = (err) => err instanceof ApiError && err.kind === "unauthorized";
  const loader = createLoader({ api, view, chatId, isIdle: () => !busy && signedIn, onRefused: signOut });

  /** Resolves to true when the daemon's history replaced what is shown. */
  async function loadHistory() {
    try {
      return await history.load();
    } catch (err) {
      if (refused(err)) signOut(REFUSED);
      return false;
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

  /** The tenant of `token`: a name, null (not known) or REFUSED_TOKEN. */
  async function identify(token) {
    if (typeof whoami !== "function") return null;
    try {
      return await whoami(token);
    } catch (err) {
      return refused(err) ? REFUSED_TOKEN : null; // a network failure says nothing of the token
    }
  }

  /** Resolves to false when the stored transcript shown turned out another tenant's. */
  async function showAccount(token) {
    const who = await identify(token);
    if (active !== token) return true; // signed out or switched meanwhile
    tenant = typeof who === "string" ? who : null;
    view.setAccount?.(tenant);
    return tenant === null || convo.own(tenant);
  }

  /**
   * Show the stored transcript of the account of `token` (and only its): the
   * tab's sessionStorage outlives a change of account (another tab signs in as
   * someone else, this one reloads), and another account's conversation must
   * not be painted, continued or saved again under this one.
   */
  function showOwn(token) {
    const key = tokenKey(token);
    if (key === shownFor) return; // this account's conversation is what is shown
    shownFor = key;
    convo.restore({ key });
  }

  async function enter(token) {
    active = token;
    changedElsewhere = false;
    signedIn = true;
    view.showChat();
    view.setStatus(`Chat “${chatId}”`, "ok");
    showOwn(token);
    let lastSeen = convo.lastSeenOutbox(); // this account's transcript only (showOwn)
    const [, , , loaded, ours] = await Promise.all([loader.commands(), loader.health(), loader.status(), loadHistory(), showAccount(token)]);
    if (!ours) {
      // the token is another tenant's now: nothing of the transcript stays, nor its outbox ids
      lastSeen = 0;
      if (loaded) convo.save();
      else convo.clear();
    }
    if (signedIn && notice) view.setStatus(...notice); // why a link was not taken, over "Connected"
    notice = null;
    // the history holds the posts in their place: listen after the newest it named
    if (loaded) lastSeen = Math.max(lastSeen, convo.lastSeenOutbox(), history.newestPost);
    if (signedIn) listen(lastSeen);
  }

  function showForm(message = "") {
    view.showTokenForm(message);
    view.setStatus("Not signed in", "error");
  }

  /** Say [text, tone] now when signed in, else once signed in (over "Connected"). */
  function later(said) {
    if (signedIn) view.setStatus(...said);
    else notice = said;
  }

  /** Show the stored conversation and the chat, or the token form. */
  async function start({ hashToken = null } = {}) {
    // the stored conversation is painted once the token is known (enter): it may be another account's
    if (hashToken && (await openLink(hashToken))) return;
    if (signedIn) return;
    const stored = tokens.get();
    if (!stored) return showForm("");
    await enter(stored);
  }

  /**
   * A #token= link was opened (at load or into the open page). Resolves to true
   * when the page is signed in with the link's token. A token that differs from
   * the one in use (or stored and working) is only taken once the person confirms.
   */
  async function openLink(raw) {
    const link = cleanToken(raw);
    if (!link) return false;
    const current = active ?? tokens.get();
    if (!current) return submitToken(link); // the first open: the daemon's start-up link
    if (link === current) {
      if (!signedIn) await enter(current);
      return true;
    }
    const [theirs, ours] = await Promise.all([identify(link), identify(current)]);
    if (theirs === REFUSED_TOKEN) {
      later(["The link's access token was refused: this browser stays signed in as before", "error"]);
      return false;
    }
    const working = ours !== REFUSED_TOKEN;
    const same = working && typeof theirs === "string" && theirs === ours; // a new token of the same account
    if (working && !same) {
      const ask = { from: typeof ours === "string" ? ours : null, to: theirs };
      const yes = typeof view.confirmSwitch === "function" ? await view.confirmSwitch(ask) : false; // never unasked
      if (!yes) {
        later([`Still signed in as ${typeof ours === "string" ? `“${ours}”` : "before"}: the link was not used`, "ok"]);
        return false;
      }
    }
    if ((active ?? tokens.get()) !== current) return false; // changed meanwhile (another tab): not on an old answer
    tokens.set(link);
    if (signedIn) {
      // another account in the open page: without the old account's conversation
      if (listener) listener.stop();
      convo.clear();
      if (typeof view.reload === "function") {
        signedIn = false;
        active = null;
        view.reload(); // afresh: the stored token is the link's now
        return true;
      }
    }
    await enter(link);
    return true;
  }

  /** The token form was submitted. Returns false when `raw` is no token. */
  async function submitToken(raw) {
    let token;
    try {
      token = tokens.set(raw);
    } catch {
      view.showTokenForm("That does not look like a token: paste the value after #token= in the link “roost web-token --link” prints.");
      return false;
    }
    await enter(token);
    return true;
  }

  /**
   * localStorage's token changed (another tab signed in as someone else, or
   * out). This tab stops sending (it would otherwise go on under its old
   * token while the browser is someone else's) and tells the person; a reload
   * continues as the new account.
   */
  async function storedTokenChanged() {
    const now = tokens.get();
    if (!signedIn || now === active || changedElsewhere) return;
    changedElsewhere = true;
    if (listener) listener.stop();
    signedIn = false;
    const who = now ? await identify(now) : null;
    if (!changedElsewhere) return; // signed in again meanwhile
    view.showAccountChanged?.({ to: typeof who === "string" ? who : null, signedOut: !now });
    view.setStatus(now ? "Signed in as another account in another tab" : "Signed out in another tab", "error");
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
    // over the limit loaded at sign-in: asked again (no await otherwise: busy at once)
    if (overLimit(text) && (!(await withinLimit(text)) || !canRun())) return false;
    convo.add({ role: "user", text, ...(sent.length ? { sent } : {}) });
    return runTurn(text, ids);
  }

  const overLimit = (text) => loader.limit !== null && charCount(text) > loader.limit;

  /**
   * False (and the person told) when `text` is over the daemon's message limit
   * (GET /api/status's `limits.max_message_chars`, counted in code points as
   * the daemon does). The daemon is the authority: without a known limit the
   * message goes and the daemon answers; over the limit loaded at sign-in, the
   * limit is asked again first (a reloaded configuration may have raised it).
   */
  async function withinLimit(text) {
    const count = charCount(text);
    await loader.status();
    if (loader.limit === null || count <= loader.limit) return true;
    view.setStatus(tooLong(count, loader.limit), "error");
    return false;
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
        const asked = convo.list[convo.list.indexOf(reply) - 1];
        if (changes.kind === "command" && asked?.role === "user") convo.update(asked, { kind: "command" });
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
    openLink,
    storedTokenChanged,
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
    /** The token this tab signed in with (what requests send), or null. */
    get token() {
      return active;
    },
    get tenant() {
      return tenant;
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
