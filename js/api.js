/**
 * HTTP client for the roost daemon's web API, built on an injected fetch.
 *
 * No DOM. createApi({fetch, getToken}) returns:
 *   streamChat(text, {chat, attachments, onDelta, onProgress, signal}) -> Promise<{text, kind, files?, actions?}>
 *       POST /api/chat/stream, read as server-sent events (api_turn.js:
 *       delta* then one final, or error; tool/retry/info progress on the
 *       way); falls back to POST /api/chat when the server has no streaming
 *       route (404/405).
 *   chat(text, {chat, attachments, signal}) -> Promise<{text, kind}>   POST /api/chat
 *       (`attachments`: upload ids, attach.js)
 *   commands({signal})             -> Promise<body>           GET /api/commands
 *   health({signal})               -> Promise<boolean>        GET /healthz
 *   missed({chat, after, signal})  -> Promise<[{id, key, text, at_ms}]>
 *       GET /api/outbox: proactive messages (reminders, jobs) newer than `after`
 *   events({chat, onMessage, signal}) -> Promise<void>
 *       GET /api/events: calls onMessage({id, key, text, at_ms}) for each
 *       proactive message pushed while open; resolves when the stream ends
 *   history, conversations, newChat, stopChat, attach: see api_history.js
 * Every failure is an ApiError whose `kind` is one of: unauthorized (401 or
 * no token), http, network, protocol, server (an SSE error event), aborted.
 */

import { withActions } from "./actions.js";
import { historyMethods } from "./api_history.js";
import { readTurn } from "./api_turn.js";
import { ApiError, discard, httpError, readEvents, replyKind, withFiles, wrapFailure } from "./api_util.js";

export { ApiError, decodeChunks, readEvents, REPLY_KINDS } from "./api_util.js";

/**
 * @param {{fetch: typeof fetch, getToken: () => (string|null|undefined), baseUrl?: string}} opts
 */
export function createApi({ fetch: fetchFn, getToken, baseUrl = "" }) {
  if (typeof fetchFn !== "function") throw new TypeError("createApi: fetch is required");
  if (typeof getToken !== "function") throw new TypeError("createApi: getToken is required");

  async function request(method, path, { body, auth = true, accept = "application/json", signal } = {}) {
    const headers = { Accept: accept };
    if (auth) {
      const token = getToken();
      if (!token) throw new ApiError("no access token", { kind: "unauthorized", status: 401 });
      headers.Authorization = `Bearer ${token}`;
    }
    if (body !== undefined) headers["Content-Type"] = "application/json";
    let res;
    try {
      res = await fetchFn(baseUrl + path, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
        signal,
        cache: "no-store",
      });
    } catch (err) {
      throw wrapFailure(err, "network", "cannot reach the roost daemon");
    }
    if (res.status === 401) {
      await discard(res);
      throw new ApiError("the access token was refused", { kind: "unauthorized", status: 401 });
    }
    return res;
  }

  async function json(res) {
    if (!res.ok) throw await httpError(res);
    try {
      return await res.json();
    } catch (err) {
      throw wrapFailure(err, "protocol", "the daemon sent a reply that is not JSON");
    }
  }

  // `attachments`: ids from POST /api/upload (attach.js); sent only when there are some
  const chatBody = (text, chatId, attachments) =>
    attachments?.length ? { text, chat: chatId, attachments } : { text, chat: chatId };

  async function chat(text, { chat: chatId = "default", attachments, signal } = {}) {
    const res = await request("POST", "/api/chat", { body: chatBody(text, chatId, attachments), signal });
    const body = await json(res);
    if (!body || typeof body.reply !== "string") {
      throw new ApiError("the daemon's reply has no text", { kind: "protocol", status: res.status });
    }
    return withActions(withFiles({ text: body.reply, kind: replyKind(body.kind) }, body.files), body.actions);
  }

  async function streamChat(text, { chat: chatId = "default", attachments, onDelta, onProgress, signal } = {}) {
    const res = await request("POST", "/api/chat/stream", {
      body: chatBody(text, chatId, attachments),
      accept: "text/event-stream",
      signal,
    });
    if (res.status === 404 || res.status === 405) {
      await discard(res);
      return chat(text, { chat: chatId, attachments, signal });
    }
    if (!res.ok) throw await httpError(res);
    if (!res.body) throw new ApiError("the daemon sent an empty stream", { kind: "protocol", status: res.status });
    return readTurn(res, { onDelta, onProgress });
  }

  async function commands({ signal } = {}) {
    return json(await request("GET", "/api/commands", { signal }));
  }

  async function health({ signal } = {}) {
    try {
      const res = await request("GET", "/healthz", { auth: false, signal });
      if (!res.ok) {
        await discard(res);
        return false;
      }
      const body = await res.json().catch(() => null);
      return Boolean(body && body.ok === true);
    } catch (err) {
      if (err instanceof ApiError && err.kind === "aborted") throw err;
      return false;
    }
  }

  async function missed({ chat: chatId = "default", after = 0, signal } = {}) {
    const query = `?chat=${encodeURIComponent(chatId)}&after=${Math.max(0, Math.floor(after))}`;
    const body = await json(await request("GET", `/api/outbox${query}`, { signal }));
    const list = body && Array.isArray(body.messages) ? body.messages : [];
    return list.filter(isOutboxMessage);
  }

  async function events({ chat: chatId = "default", onMessage, signal } = {}) {
    const path = `/api/events?chat=${encodeURIComponent(chatId)}`;
    const res = await request("GET", path, { accept: "text/event-stream", signal });
    if (!res.ok) throw await httpError(res);
    if (!res.body) return;
    try {
      for await (const ev of readEvents(res.body)) {
        if (ev.event !== "message") continue;
        let data = null;
        try {
          data = JSON.parse(ev.data);
        } catch {
          continue; // one malformed event does not end the stream
        }
        if (isOutboxMessage(data) && onMessage) onMessage(data);
      }
    } catch (err) {
      if (err instanceof ApiError) throw err;
      throw wrapFailure(err, "network", "the event stream broke");
    }
  }

  return { chat, streamChat, commands, health, missed, events, ...historyMethods({ request, json }) };
}

function isOutboxMessage(m) {
  return Boolean(m) && Number.isInteger(m.id) && m.id > 0 && typeof m.text === "string";
}
