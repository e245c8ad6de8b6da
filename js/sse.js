/**
 * Incremental parser for a text/event-stream body (WHATWG "server-sent events").
 *
 * Pure: no DOM, no I/O. Feed it decoded text in chunks of any size with
 * push(); it returns the events completed by that chunk. Chunks may split
 * anywhere, including between "\r" and "\n". Decode bytes with a streaming
 * TextDecoder before pushing so multi-byte characters split across network
 * chunks are joined (see decodeChunks in api.js).
 *
 * Event: { event: string, data: string, id: string }. A valid "retry" field
 * sets the parser's `retry` (milliseconds); this client does not reconnect.
 * Per the specification, an event still incomplete when the stream ends (no
 * blank line after it) is discarded; end() reports that through `truncated`.
 */

const NUL = "\u0000";

export class SSEParser {
  constructor() {
    this._buf = "";
    this._skipLF = false; // the previous chunk ended with "\r"
    this._bomChecked = false;
    this._data = [];
    this._hasData = false;
    this._event = "";
    this._lastId = "";
    this._pendingFields = false;
    this._ended = false;
    /** Reconnection time in ms from the last valid "retry" field, if any. */
    this.retry = undefined;
    /** True when end() found an unterminated event (it was discarded). */
    this.truncated = false;
  }

  /** The id of the last event with an id field (the spec's "last event ID"). */
  get lastEventId() {
    return this._lastId;
  }

  /**
   * Feed the next piece of decoded text.
   * @param {string} chunk
   * @returns {Array<{event: string, data: string, id: string}>}
   */
  push(chunk) {
    if (this._ended) throw new Error("SSEParser: push() after end()");
    if (typeof chunk !== "string") throw new TypeError("SSEParser: push() takes a string");
    let text = chunk;
    if (this._skipLF && text.length > 0) {
      if (text[0] === "\n") text = text.slice(1);
      this._skipLF = false;
    }
    if (!this._bomChecked && text.length > 0) {
      // The buffer is empty until the first non-empty text, so the BOM (if
      // any) is that text's first character.
      this._bomChecked = true;
      if (text[0] === "\uFEFF") text = text.slice(1);
    }
    // The kept buffer never holds a line break: scan only the new text.
    const buf = this._buf + text;
    const events = [];
    let start = 0;
    for (let i = this._buf.length; i < buf.length; i++) {
      const c = buf.charCodeAt(i);
      if (c !== 10 && c !== 13) continue;
      const line = buf.slice(start, i);
      if (c === 13) {
        if (i + 1 < buf.length) {
          if (buf.charCodeAt(i + 1) === 10) i++;
        } else {
          this._skipLF = true; // a "\n" may open the next chunk
        }
      }
      start = i + 1;
      const ev = this._line(line);
      if (ev) events.push(ev);
    }
    this._buf = buf.slice(start);
    return events;
  }

  /**
   * Signal the end of the stream. Returns the events still to deliver
   * (always none: an unterminated event is discarded, as the spec says) and
   * sets `truncated` when such an event was pending.
   * @returns {Array<{event: string, data: string, id: string}>}
   */
  end() {
    if (this._ended) return [];
    this._ended = true;
    this.truncated = this._buf.length > 0 || this._pendingFields;
    this._buf = "";
    this._resetEvent();
    return [];
  }

  _line(line) {
    if (line === "") return this._dispatch();
    if (line[0] === ":") return null; // comment / keepalive
    const colon = line.indexOf(":");
    let field;
    let value;
    if (colon === -1) {
      field = line;
      value = "";
    } else {
      field = line.slice(0, colon);
      value = line.slice(colon + 1);
      if (value[0] === " ") value = value.slice(1);
    }
    switch (field) {
      case "data":
        this._data.push(value);
        this._hasData = true;
        this._pendingFields = true;
        break;
      case "event":
        this._event = value;
        this._pendingFields = true;
        break;
      case "id":
        if (!value.includes(NUL)) this._lastId = value;
        this._pendingFields = true;
        break;
      case "retry":
        if (/^[0-9]+$/.test(value)) this.retry = Number(value);
        this._pendingFields = true;
        break;
      default:
        break; // unknown fields are ignored
    }
    return null;
  }

  _dispatch() {
    if (!this._hasData) {
      // The spec resets the buffers; an event without data is not dispatched.
      this._resetEvent();
      return null;
    }
    const ev = {
      event: this._event || "message",
      data: this._data.join("\n"),
      id: this._lastId,
    };
    this._resetEvent();
    return ev;
  }

  _resetEvent() {
    this._data = [];
    this._hasData = false;
    this._event = "";
    this._pendingFields = false;
  }
}

/**
 * Parse a whole stream at once (convenience for tests and small bodies).
 * @param {string} text
 */
export function parseAll(text) {
  const p = new SSEParser();
  const out = p.push(text);
  return out.concat(p.end());
}
