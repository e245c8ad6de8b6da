/**
 * The server-side conversation routes of the web API: history, past
 * conversations, new chat, stop, and re-attaching to a running answer.
 *
 * No DOM. historyMethods({request, json}) (the transport of api.js) returns:
 *   history({chat, conversation?, before?, limit?, signal})
 *       GET /api/history -> {conversation, messages, more, running, newest_post}
 *       messages [{seq, role, text, ts, status, kind?}], oldest first (kind
 *       "proactive": a reminder or job post, `outbox` its id; "command": a slash
 *       command or its reply, with `actions` and `settled`)
 *   conversations({chat, signal}) -> [{id, started_at, updated_at, turns, title, current}]
 *   newChat({chat, signal})       -> the new conversation id   POST /api/chat/new
 *   stopChat({chat, signal})      -> true when a turn was stopped   POST /api/chat/stop
 *   attach({chat, onDelta, onProgress, signal}) -> final reply, or null (204:
 *       nothing runs)   GET /api/chat/attach, events as in api_turn.js
 *   renameConversation({chat, conversation, title}) -> the title kept
 *   deleteConversation({chat, conversation}) -> the current conversation's id
 *   searchConversations({chat, q}) -> results (normalizeResults)
 *   status({chat}) -> {configured, model, setup, speech, maxMessageChars}   GET /api/status
 *   editMessage({chat, seq, text, onDelta, onProgress, signal}),
 *   regenerate({chat, seq, onDelta, onProgress, signal}) -> final reply (a turn's events)
 *   switchVersion({chat, seq, index}) -> true when another version is now shown
 *   thumbnail({chat, conversation, seq, file}) -> Blob | null   GET /api/attachment
 * A daemon without these routes answers 404: an ApiError {kind: "http",
 * status: 404}, which the page takes as "not supported here".
 */

import { cleanActions } from "./actions.js";
import { readTurn } from "./api_turn.js";
import { ApiError, discard, httpError } from "./api_util.js";

const ROLES = ["user", "assistant"];
const STATUSES = ["done", "stopped", "error", "summary"];
const MAX_LIMIT = 200;

function query(params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== "") q.set(k, String(v));
  return `?${q}`;
}

const TOOL_STATES = ["start", "done", "error"];
const str = (v, max = 2000) => (typeof v === "string" ? v.slice(0, max) : "");

/** The files a person sent with a message: [{name, kind, mime, size}]. */
function sentFiles(files) {
  if (!Array.isArray(files)) return [];
  return files
    .filter((f) => f && typeof f.name === "string" && typeof f.kind === "string")
    .slice(0, 10)
    .map((f) => ({ name: str(f.name, 200), kind: str(f.kind, 20), mime: str(f.mime, 100), size: Number.isFinite(f.size) ? f.size : 0 }));
}

/** An answer's tool cards as they were: [{id, name, state, args, result}]. */
function toolCards(tools) {
  if (!Array.isArray(tools)) return [];
  return tools
    .filter((t) => t && typeof t.name === "string" && t.name && TOOL_STATES.includes(t.state))
    .map((t, i) => ({ id: typeof t.id === "string" ? t.id : `t${i}`, name: str(t.name, 200), state: t.state, args: str(t.args), result: str(t.result), ms: null }));
}

function versionsOf(v) {
  if (!v || !Number.isInteger(v.index) || !Number.isInteger(v.count) || v.count < 2) return null;
  if (v.index < 0 || v.index >= v.count) return null;
  return { index: v.index, count: v.count, edited: v.edited === true };
}

/**
 * One history message, or null when malformed. `seq` is null for a failed
 * turn (kept for the page, in no session); `files` (what the person sent),
 * `tools` (an answer's tool cards), `versions` and `quote` only when present.
 */
export function historyMessage(m) {
  if (!m || !ROLES.includes(m.role) || typeof m.text !== "string") return null;
  const placed = m.kind === "proactive" || m.kind === "command"; // a post or a command: no seq
  if (!(Number.isInteger(m.seq) || (m.seq === null && (m.status === "error" || m.role === "user" || placed)))) return null;
  const out = {
    seq: m.seq,
    role: m.role,
    text: m.text,
    ts: Number.isFinite(m.ts) ? m.ts : 0,
    status: STATUSES.includes(m.status) ? m.status : "done",
  };
  const files = sentFiles(m.files);
  if (files.length) out.files = files;
  const tools = toolCards(m.tools);
  if (tools.length) out.tools = tools;
  const versions = versionsOf(m.versions);
  if (versions) out.versions = versions;
  if (typeof m.quote === "string" && m.quote) out.quote = str(m.quote);
  if (placed) out.kind = m.kind;
  if (m.kind === "proactive" && Number.isInteger(m.outbox)) out.outbox = m.outbox;
  if (m.kind === "proactive" && typeof m.job === "string") out.job = str(m.job, 40);
  const actions = cleanActions(m.actions);
  if (actions.length) {
    out.actions = actions;
    out.settled = m.settled === true;
  }
  return out;
}

/** A /api/history body as the page uses it (malformed entries dropped). `pending`: the
 * question a running answer answers, {text, ts}, or null. */
export function normalizeHistory(body) {
  const list = body && Array.isArray(body.messages) ? body.messages : [];
  const p = body && body.pending;
  return {
    conversation: body && body.conversation != null ? String(body.conversation) : "",
    messages: list.map(historyMessage).filter(Boolean),
    more: Boolean(body && body.more),
    running: Boolean(body && body.running),
    pending: p && typeof p.text === "string" ? { text: p.text, ts: Number.isFinite(p.ts) ? p.ts : 0 } : null,
    newest_post: body && Number.isInteger(body.newest_post) ? body.newest_post : 0,
  };
}

/** A /api/conversations/search body: [{conversation, title, current, hits, seq, role, snippet, match}]. */
export function normalizeResults(body) {
  const list = body && Array.isArray(body.results) ? body.results : [];
  return list
    .filter((r) => r && Number.isInteger(r.conversation))
    .map((r) => {
      const snippet = str(r.snippet, 400);
      const m = Array.isArray(r.match) ? r.match : [];
      const ok = Number.isInteger(m[0]) && Number.isInteger(m[1]) && 0 <= m[0] && m[0] <= m[1] && m[1] <= snippet.length;
      return {
        conversation: String(r.conversation),
        title: str(r.title, 200),
        current: r.current === true,
        updatedAt: Number.isFinite(r.updated_at) ? r.updated_at : 0,
        hits: Number.isInteger(r.hits) ? r.hits : 0,
        seq: Number.isInteger(r.seq) ? r.seq : null,
        role: r.role === "user" ? "user" : "assistant",
        snippet,
        match: ok ? [m[0], m[1]] : null,
      };
    });
}

/**
 * A /api/status body: {configured, model, setup: {toml, env} | null, speech: {configured, on},
 * maxMessageChars} (`limits.max_message_chars`: a positive integer, else null: not said).
 */
export function normalizeStatus(body) {
  const model = body && body.model ? body.model : {};
  const most = body && body.limits ? body.limits.max_message_chars : null;
  const setup = body && body.setup && typeof body.setup.toml === "string" ? { toml: body.setup.toml, env: str(body.setup.env) } : null;
  const speech = body && body.speech ? body.speech : {};
  return {
    configured: model.configured !== false,
    model: str(model.describe, 200),
    setup,
    speech: { configured: speech.configured === true, on: speech.on === true },
    maxMessageChars: Number.isSafeInteger(most) && most > 0 ? most : null,
  };
}

/** A /api/conversations body, newest first as sent. */
export function normalizeConversations(body) {
  const list = body && Array.isArray(body.conversations) ? body.conversations : [];
  return list
    .filter((c) => c && (typeof c.id === "string" || Number.isInteger(c.id)))
    .map((c) => ({
      id: String(c.id),
      startedAt: Number.isFinite(c.started_at) ? c.started_at : 0,
      updatedAt: Number.isFinite(c.updated_at) ? c.updated_at : 0,
      turns: Number.isInteger(c.turns) ? c.turns : 0,
      title: typeof c.title === "string" ? c.title : "",
      current: c.current === true,
    }));
}

export function historyMethods({ request, json }) {
  async function history({ chat = "default", conversation, before, limit, signal } = {}) {
    const lim = Number.isInteger(limit) ? Math.min(Math.max(limit, 1), MAX_LIMIT) : undefined;
    const path = `/api/history${query({ chat, conversation, before, limit: lim })}`;
    return normalizeHistory(await json(await request("GET", path, { signal })));
  }

  async function conversations({ chat = "default", signal } = {}) {
    return normalizeConversations(await json(await request("GET", `/api/conversations${query({ chat })}`, { signal })));
  }

  async function newChat({ chat = "default", signal } = {}) {
    const body = await json(await request("POST", "/api/chat/new", { body: { chat }, signal }));
    return body && body.conversation != null ? String(body.conversation) : "";
  }

  async function stopChat({ chat = "default", signal } = {}) {
    const body = await json(await request("POST", "/api/chat/stop", { body: { chat }, signal }));
    return Boolean(body && body.stopped);
  }

  async function renameConversation({ chat = "default", conversation, title, signal } = {}) {
    const body = { chat, conversation: Number(conversation), title };
    const reply = await json(await request("POST", "/api/conversations/rename", { body, signal }));
    return typeof reply?.title === "string" ? reply.title : title;
  }

  async function deleteConversation({ chat = "default", conversation, signal } = {}) {
    const body = { chat, conversation: Number(conversation) };
    const reply = await json(await request("POST", "/api/conversations/delete", { body, signal }));
    return reply && reply.current != null ? String(reply.current) : "";
  }

  async function searchConversations({ chat = "default", q, signal } = {}) {
    const path = `/api/conversations/search${query({ chat, q })}`;
    return normalizeResults(await json(await request("GET", path, { signal })));
  }

  async function status({ chat = "default", signal } = {}) {
    return normalizeStatus(await json(await request("GET", `/api/status${query({ chat })}`, { signal })));
  }

  /** POST an edit or a regeneration; the answer streams as a turn does. */
  async function branchTurn(path, body, { onDelta, onProgress, signal }) {
    const res = await request("POST", path, { body, accept: "text/event-stream", signal });
    if (!res.ok) throw await httpError(res);
    if (!res.body) throw new ApiError("the daemon sent an empty stream", { kind: "protocol", status: res.status });
    return readTurn(res, { onDelta, onProgress });
  }

  const editMessage = ({ chat = "default", seq, text, ...handlers } = {}) =>
    branchTurn("/api/chat/edit", { chat, seq, text }, handlers);
  const regenerate = ({ chat = "default", seq, ...handlers } = {}) =>
    branchTurn("/api/chat/regenerate", { chat, seq }, handlers);

  async function switchVersion({ chat = "default", seq, index, signal } = {}) {
    const reply = await json(await request("POST", "/api/chat/version", { body: { chat, seq, index }, signal }));
    return Boolean(reply && reply.switched);
  }

  /** A sent image's thumbnail as a Blob, or null when the daemon no longer has it. */
  async function thumbnail({ chat = "default", conversation, seq, file = 0, signal } = {}) {
    const path = `/api/attachment${query({ chat, conversation, seq, file })}`;
    const res = await request("GET", path, { accept: "image/*", signal });
    if (!res.ok) {
      await discard(res);
      return null;
    }
    return res.blob();
  }

  async function attach({ chat = "default", onDelta, onProgress, signal } = {}) {
    const res = await request("GET", `/api/chat/attach${query({ chat })}`, { accept: "text/event-stream", signal });
    if (res.status === 204) {
      await discard(res);
      return null;
    }
    if (!res.ok) throw await httpError(res);
    if (!res.body) throw new ApiError("the daemon sent an empty stream", { kind: "protocol", status: res.status });
    return readTurn(res, { onDelta, onProgress });
  }

  return {
    history,
    conversations,
    newChat,
    stopChat,
    attach,
    renameConversation,
    deleteConversation,
    searchConversations,
    status,
    editMessage,
    regenerate,
    switchVersion,
    thumbnail,
  };
}
