/**
 * Shared pieces of the web API client (api.js): the ApiError type, byte
 * streams to server-sent events, and the small helpers that turn a failed
 * response or a broken stream into an ApiError. No DOM, no I/O of its own.
 */

import { SSEParser } from "./sse.js";

export const REPLY_KINDS = ["answer", "command", "refusal", "error", "stopped"];

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

export function replyKind(kind) {
  return REPLY_KINDS.includes(kind) ? kind : "answer";
}

/** A reply's files, kept only when well-formed download links of this server (one-time links
 * under /files/); the result gets `files` only when there is at least one. */
export function withFiles(result, files) {
  if (!Array.isArray(files)) return result;
  const ok = files.filter(
    (f) =>
      f &&
      typeof f.name === "string" &&
      typeof f.url === "string" &&
      /^\/files\/[A-Za-z0-9_.-]+$/.test(f.url) &&
      Number.isFinite(f.size),
  );
  const mime = (f) => (typeof f.mime === "string" && /^[a-z0-9.+-]+\/[a-z0-9.+-]+$/.test(f.mime) ? f.mime : "");
  return ok.length ? { ...result, files: ok.map((f) => ({ name: f.name, url: f.url, size: f.size, mime: mime(f) })) } : result;
}

export function parseData(ev, soFar) {
  let data;
  try {
    data = JSON.parse(ev.data);
  } catch {
    throw protocolError(`a ${ev.event} event carries data that is not JSON`, soFar);
  }
  if (!data || typeof data !== "object") throw protocolError(`a ${ev.event} event is not an object`, soFar);
  return data;
}

export function protocolError(message, partial) {
  return new ApiError(message, { kind: "protocol", partial });
}

function isAbort(err) {
  return Boolean(err) && (err.name === "AbortError" || err.name === "TimeoutError");
}

export function wrapFailure(err, kind, message, partial = "") {
  if (isAbort(err)) return new ApiError("stopped", { kind: "aborted", partial });
  const detail = err && err.message ? `: ${err.message}` : "";
  return new ApiError(message + detail, { kind, partial });
}

export async function discard(res) {
  try {
    await res.body?.cancel();
  } catch {
    // nothing to release
  }
}

export async function httpError(res) {
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
