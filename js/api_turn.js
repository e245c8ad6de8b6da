/**
 * Reading one turn's server-sent events (POST /api/chat/stream and
 * GET /api/chat/attach): `delta` pieces, then one `final` (or `error`), and
 * on the way `tool`, `retry` and `info` progress events.
 *
 * No DOM. readTurn(res, {onDelta, onProgress}) resolves to the final
 * {text, kind, files?}; onDelta(piece, soFar) gets each piece of text and
 * onProgress(event) each well-formed progress event, normalised by
 * progressEvent(). Unknown event types are ignored, so the server may add
 * new ones; a malformed progress event is skipped, a malformed delta or
 * final is a protocol error.
 */

import { withActions } from "./actions.js";
import { ApiError, parseData, protocolError, readEvents, replyKind, withFiles, wrapFailure } from "./api_util.js";

const TOOL_STATES = ["start", "done", "error"];
const MAX_FIELD = 2000;

const str = (v) => (typeof v === "string" ? v.slice(0, MAX_FIELD) : "");
const int = (v) => (Number.isFinite(v) && v >= 0 ? Math.round(v) : null);

/**
 * A progress event as the page uses it, or null when malformed:
 *   {type: "tool", id, name, state, args, result, ms}
 *   {type: "retry", attempt, max, reason}
 *   {type: "info", model}
 */
export function progressEvent(type, data) {
  if (!data || typeof data !== "object") return null;
  if (type === "tool") {
    if (typeof data.name !== "string" || !data.name || !TOOL_STATES.includes(data.state)) return null;
    const id = typeof data.id === "string" || Number.isFinite(data.id) ? String(data.id) : data.name;
    return { type, id, name: str(data.name), state: data.state, args: str(data.args), result: str(data.result), ms: int(data.ms) };
  }
  if (type === "retry") {
    const attempt = int(data.attempt);
    if (attempt === null) return null;
    return { type, attempt, max: int(data.max), reason: str(data.reason) };
  }
  if (type === "info") {
    return typeof data.model === "string" && data.model ? { type, model: str(data.model) } : null;
  }
  return null;
}

function parseProgress(ev) {
  try {
    return progressEvent(ev.event, JSON.parse(ev.data));
  } catch {
    return null;
  }
}

/** Read a turn's event stream from a fetch Response (status 200, a body). */
export async function readTurn(res, { onDelta, onProgress } = {}) {
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
        const result = withActions(withFiles({ text: data.text, kind: replyKind(data.kind) }, data.files), data.actions);
        return data.unstored === true ? { ...result, unstored: true } : result; // not among the stored turns
      } else if (ev.event === "error") {
        const data = parseData(ev, soFar);
        const message = typeof data.message === "string" && data.message ? data.message : "the turn failed";
        throw new ApiError(message, { kind: "server", status: res.status, partial: soFar });
      } else if (onProgress) {
        const p = parseProgress(ev);
        if (p) onProgress(p);
      }
    }
  } catch (err) {
    if (err instanceof ApiError) throw err;
    throw wrapFailure(err, "network", "the connection broke during the reply", soFar);
  }
  throw protocolError("the connection closed before the reply finished", soFar);
}
