/**
 * HTTP client for the roost daemon's web API, built on an injected fetch.
 *
 * No DOM. createApi({fetch, getToken}) returns:
 *   streamChat(text, {chat, onDelta, signal}) -> Promise<{text, kind}>
 *       POST /api/chat/stream, read as server-sent events (delta* then one
 *       final, or error); falls back to POST /api/chat when the server has
 *       no streaming route (404/405).
 *   chat(text, {chat, signal})     -> Promise<{text, kind}>   POST /api/chat
 *   commands({signal})             -> Promise<body>           GET /api/commands
 *   health({signal})               -> Promise<boolean>        GET /healthz
 *   missed({chat, after, signal})  -> Promise<[{id, key, text, at_ms}]>
 *       GET /api/outbox: proactive messages (reminders, jobs) newer than `after`
 *   events({chat, onMessage, signal}) -> Promise<void>
 *       GET /api/events: calls onMessage({id, key, text, at_ms}) for each
 *       proactive message pushed while open; resolves when the stream ends
 * Every failure is an ApiError whose `kind` is one of: unauthorized (401 or
 * no token), http, network, protocol, server (an SSE error event), aborted.
 */

import { withActions } from "./actions.js";
import { SSEParser } from "./sse.js";

export const REPLY_KINDS = ["answer", "command", "refusal", "error"];

export class ApiError extends Error {
  /**
   * @param {string} message
   * @param {{kind?: string, status?: number, partial?: string}} [info]
   */
  constructor(message, { kind = "http", status = 0, partial = "" } = {}) {
    super(message);
    this.name = "ApiError";
    this.kind = kind;
    this.status = status;
    /** Text streamed before the failure, if any. */
    this.partial = partial;
  }
}

/**
 * Decode a byte stream to text chunks; a multi-byte character split across
 * chunks is held back until it is complete.
 * @param {ReadableStream<Uint8Array>} body
 */
export async function* decodeChunks(body) {
  const reader = body.getReader();
  const decoder = new TextDecoder("utf-8");
  let finished = false;
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      const text = decoder.decode(value, { stream: true });
      if (text) yield text;
    }
    finished = true;
    const tail = decoder.decode();
    if (tail) yield tail;
  } finally {
    if (!finished) {
      // The consumer stopped early (or reading failed): release the stream.
      reader.cancel().catch(() => {});
    }
    reader.releaseLock?.();
  }
}

/**
 * Server-sent events from a byte stream. An unterminated last event (no
 * blank line after it) is not yielded, as the SSE specification says.
 * @param {ReadableStream<Uint8Array>} body
 */
export async function* readEvents(body) {
  const parser = new SSEParser();
  for await (const text of decodeChunks(body)) {
    yield* parser.push(text);
  }
  yield* parser.end();
}

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

  async function chat(text, { chat: chatId = "default", signal } = {}) {
    const res = await request("POST", "/api/chat", { body: { text, chat: chatId }, signal });
    const body = await json(res);
    if (!body || typeof body.reply !== "string") {
      throw new ApiError("the daemon's reply has no text", { kind: "protocol", status: res.status });
    }
    return withActions(withFiles({ text: body.reply, kind: replyKind(body.kind) }, body.files), body.actions);
  }

  async function streamChat(text, { chat: chatId = "default", onDelta, signal } = {}) {
    const res = await request("POST", "/api/chat/stream", {
      body: { text, chat: chatId },
      accept: "text/event-stream",
      signal,
    });
    if (res.status === 404 || res.status === 405) {
      await discard(res);
      return chat(text, { chat: chatId, signal });
    }
    if (!res.ok) throw await httpError(res);
    if (!res.body) throw new ApiError("the daemon sent an empty stream", { kind: "protocol", status: res.status });
    let soFar = "";
    try {
      for await (const ev of readEvents(res.body)) {
        if (ev.event === "delta") {
          const piece = parseData(ev, soFar).text;
          if (typeof piece !== "string") throw protocolError("a delta event has no text", soFar);
          soFar += piece;
          if (onDelta && piece) onDelta(piece, soFar);
        } else if (ev.event === "final") {
          const data = parseData(ev, soFar);
          if (typeof data.text !== "string") throw protocolError("the final event has no text", soFar);
          return withActions(withFiles({ text: data.text, kind: replyKind(data.kind) }, data.files), data.actions);
        } else if (ev.event === "error") {
          const data = parseData(ev, soFar);
          const message = typeof data.message === "string" && data.message ? data.message : "the turn failed";
          throw new ApiError(message, { kind: "server", status: res.status, partial: soFar });
        }
        // Other event types are ignored, so the server may add new ones.
      }
    } catch (err) {
      if (err instanceof ApiError) throw err;
      throw wrapFailure(err, "network", "the connection broke during the reply", soFar);
    }
    throw protocolError("the connection closed before the reply finished", soFar);
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

  return { chat, streamChat, commands, health, missed, events };
}

function isOutboxMessage(m) {
  return Boolean(m) && Number.isInteger(m.id) && m.id > 0 && typeof m.text === "string";
}

function replyKind(kind) {
  return REPLY_KINDS.includes(kind) ? kind : "answer";
}

/** A reply's files, kept only when well-formed download links of this server (one-time links
 * under /files/); the result gets `files` only when there is at least one. */
function withFiles(result, files) {
  if (!Array.isArray(files)) return result;
  const ok = files.filter(
    (f) =>
      f &&
      typeof f.name === "string" &&
      typeof f.url === "string" &&
      /^\/files\/[A-Za-z0-9_.-]+$/.test(f.url) &&
      Number.isFinite(f.size),
  );
  return ok.length ? { ...result, files: ok.map(({ name, url, size }) => ({ name, url, size })) } : result;
}

function parseData(ev, soFar) {
  let data;
  try {
    data = JSON.parse(ev.data);
  } catch {
    throw protocolError(`a ${ev.event} event carries data that is not JSON`, soFar);
  }
  if (!data || typeof data !== "object") throw protocolError(`a ${ev.event} event is not an object`, soFar);
  return data;
}

function protocolError(message, partial) {
  return new ApiError(message, { kind: "protocol", partial });
}

function isAbort(err) {
  return Boolean(err) && (err.name === "AbortError" || err.name === "TimeoutError");
}

function wrapFailure(err, kind, message, partial = "") {
  if (isAbort(err)) return new ApiError("stopped", { kind: "aborted", partial });
  const detail = err && err.message ? `: ${err.message}` : "";
  return new ApiError(message + detail, { kind, partial });
}

async function discard(res) {
  try {
    await res.body?.cancel();
  } catch {
    // nothing to release
  }
}

async function httpError(res) {
  let detail = "";
  try {
    const raw = await res.text();
    try {
      const body = JSON.parse(raw);
      detail = typeof body?.error === "string" ? body.error : typeof body?.message === "string" ? body.message : raw;
    } catch {
      detail = raw;
    }
  } catch {
    // no body
  }
  detail = detail.trim().slice(0, 300);
  const head = `HTTP ${res.status}${res.statusText ? ` ${res.statusText}` : ""}`;
  return new ApiError(detail ? `${head}: ${detail}` : head, { kind: "http", status: res.status });
}
