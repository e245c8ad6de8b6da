/**
 * The server-side conversation routes of the web API: history, past
 * conversations, new chat, stop, and re-attaching to a running answer.
 *
 * No DOM. historyMethods({request, json}) (the transport of api.js) returns:
 *   history({chat, conversation?, before?, limit?, signal})
 *       GET /api/history -> {conversation, messages, more, running}
 *       messages [{seq, role, text, ts, status}], oldest first
 *   conversations({chat, signal}) -> [{id, started_at, updated_at, turns, title, current}]
 *   newChat({chat, signal})       -> the new conversation id   POST /api/chat/new
 *   stopChat({chat, signal})      -> true when a turn was stopped   POST /api/chat/stop
 *   attach({chat, onDelta, onProgress, signal}) -> final reply, or null (204:
 *       nothing runs)   GET /api/chat/attach, events as in api_turn.js
 * A daemon without these routes answers 404: an ApiError {kind: "http",
 * status: 404}, which the page takes as "not supported here".
 */

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

/** One history message, or null when malformed. */
export function historyMessage(m) {
  if (!m || !ROLES.includes(m.role) || typeof m.text !== "string" || !Number.isInteger(m.seq)) return null;
  return {
    seq: m.seq,
    role: m.role,
    text: m.text,
    ts: Number.isFinite(m.ts) ? m.ts : 0,
    status: STATUSES.includes(m.status) ? m.status : "done",
  };
}

/** A /api/history body as the page uses it (malformed entries dropped). */
export function normalizeHistory(body) {
  const list = body && Array.isArray(body.messages) ? body.messages : [];
  return {
    conversation: body && body.conversation != null ? String(body.conversation) : "",
    messages: list.map(historyMessage).filter(Boolean),
    more: Boolean(body && body.more),
    running: Boolean(body && body.running),
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

  return { history, conversations, newChat, stopChat, attach };
}
