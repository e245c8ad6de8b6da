/**
 * Where the page keeps things between loads: the access token and the
 * visible conversation.
 *
 * Pure: storage objects (localStorage / sessionStorage or any object with
 * getItem/setItem/removeItem) are passed in, and storage failures (private
 * browsing, quota) fall back to memory instead of breaking the page.
 */

export const TOKEN_KEY = "roost.token";
export const TRANSCRIPT_KEY = "roost.transcript";
const TOKEN_RE = /^[\x21-\x7e]{1,512}$/; // visible ASCII, no spaces

/** A token as pasted or read from the URL, or null when it cannot be one. */
export function cleanToken(raw) {
  if (typeof raw !== "string") return null;
  let t = raw.trim();
  if (/^bearer\s+/i.test(t)) t = t.replace(/^bearer\s+/i, "");
  // Accept a pasted start-up URL as well as the bare token.
  const frag = t.indexOf("#");
  if (frag !== -1 && /(^|[#&])token=/.test(t.slice(frag))) {
    const fromUrl = tokenFromHash(t.slice(frag)).token;
    if (fromUrl) return fromUrl;
  }
  return TOKEN_RE.test(t) ? t : null;
}

/**
 * Read `token=...` from a URL fragment such as "#token=abc".
 * @param {string} hash  location.hash, with or without the leading "#"
 * @returns {{token: string|null, rest: string}} rest: the fragment without
 *   the token ("" when nothing else was in it), to put back in the address bar
 */
export function tokenFromHash(hash) {
  const raw = typeof hash === "string" ? hash.replace(/^#/, "") : "";
  if (!raw) return { token: null, rest: "" };
  const parts = raw.split("&");
  let token = null;
  const kept = [];
  for (const part of parts) {
    if (part.startsWith("token=")) {
      let value;
      try {
        value = decodeURIComponent(part.slice("token=".length));
      } catch {
        value = ""; // a broken %-escape: not a token
      }
      const clean = TOKEN_RE.test(value) ? value : null;
      if (clean && token === null) token = clean;
    } else if (part) {
      kept.push(part);
    }
  }
  return { token, rest: kept.length ? `#${kept.join("&")}` : "" };
}

function safeStorage(storage) {
  const memory = new Map();
  const ok = storage && typeof storage.getItem === "function";
  return {
    get(key) {
      if (ok) {
        try {
          return storage.getItem(key);
        } catch {
          // fall through to memory
        }
      }
      return memory.has(key) ? memory.get(key) : null;
    },
    set(key, value) {
      memory.set(key, value);
      if (ok) {
        try {
          storage.setItem(key, value);
        } catch {
          // memory keeps it for this page
        }
      }
    },
    remove(key) {
      memory.delete(key);
      if (ok) {
        try {
          storage.removeItem(key);
        } catch {
          // nothing to do
        }
      }
    },
  };
}

/** The access token, kept in `storage` (localStorage in the page). */
export function createTokenStore(storage, key = TOKEN_KEY) {
  const s = safeStorage(storage);
  return {
    get: () => cleanToken(s.get(key) ?? ""),
    set(token) {
      const clean = cleanToken(token);
      if (!clean) throw new Error("not a valid token");
      s.set(key, clean);
      return clean;
    },
    clear: () => s.remove(key),
  };
}

/**
 * The conversation shown on the page, kept in `storage` (sessionStorage in
 * the page) so a reload does not blank it. At most `limit` messages.
 */
export function createTranscriptStore(storage, { key = TRANSCRIPT_KEY, limit = 200 } = {}) {
  const s = safeStorage(storage);
  return {
    load() {
      let list;
      try {
        list = JSON.parse(s.get(key) ?? "[]");
      } catch {
        return [];
      }
      if (!Array.isArray(list)) return [];
      return list.filter(
        (m) =>
          m &&
          (m.role === "user" || m.role === "assistant") &&
          typeof m.text === "string" &&
          typeof m.id === "number",
      );
    },
    save(messages) {
      const slim = messages.slice(-limit).map((m) => ({
        id: m.id,
        role: m.role,
        text: m.text,
        kind: m.kind,
        status: m.status,
        error: m.error,
        ...(Number.isInteger(m.outboxId) ? { outboxId: m.outboxId } : {}),
        ...(Number.isInteger(m.seq) ? { seq: m.seq } : {}),
      }));
      s.set(key, JSON.stringify(slim));
    },
    clear: () => s.remove(key),
  };
}
