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

/** SHA-256 of a string (its UTF-8 bytes), as 64 hex digits; synchronous (crypto.subtle is async, and absent over plain http). */
export function sha256Hex(text) {
  const K = [];
  const H = [];
  const frac = (x) => ((x - Math.floor(x)) * 0x100000000) >>> 0;
  for (let n = 2, found = 0; found < 64; n++) {
    let prime = true;
    for (let d = 2; d * d <= n; d++) if (n % d === 0) prime = false;
    if (!prime) continue;
    if (found < 8) H.push(frac(Math.sqrt(n)));
    K.push(frac(Math.cbrt(n)));
    found++;
  }
  const bytes = new TextEncoder().encode(String(text));
  const len = ((bytes.length + 9 + 63) >> 6) << 6;
  const data = new Uint8Array(len);
  data.set(bytes);
  data[bytes.length] = 0x80;
  const view = new DataView(data.buffer);
  view.setUint32(len - 8, Math.floor(bytes.length / 0x20000000));
  view.setUint32(len - 4, (bytes.length * 8) >>> 0);
  const w = new Uint32Array(64);
  const rotr = (x, n) => (x >>> n) | (x << (32 - n));
  for (let off = 0; off < len; off += 64) {
    for (let i = 0; i < 16; i++) w[i] = view.getUint32(off + i * 4);
    for (let i = 16; i < 64; i++) {
      const s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >>> 3);
      const s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >>> 10);
      w[i] = (w[i - 16] + s0 + w[i - 7] + s1) >>> 0;
    }
    let [a, b, c, d, e, f, g, h] = H;
    for (let i = 0; i < 64; i++) {
      const t1 = (h + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + K[i] + w[i]) >>> 0;
      const t2 = ((rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c))) >>> 0;
      [h, g, f, e, d, c, b, a] = [g, f, e, (d + t1) >>> 0, c, b, a, (t1 + t2) >>> 0];
    }
    [a, b, c, d, e, f, g, h].forEach((x, i) => (H[i] = (H[i] + x) >>> 0));
  }
  return H.map((x) => x.toString(16).padStart(8, "0")).join("");
}

/**
 * Whose a stored transcript is: a hash of the access token (the token itself
 * stays only where it already is, in localStorage), not the token.
 */
export function tokenKey(token) {
  return sha256Hex(`roost.transcript\0${token}`).slice(0, 32);
}

/**
 * The conversation shown on the page, kept in `storage` (sessionStorage in
 * the page) so a reload does not blank it. At most `limit` messages.
 *
 * It is stored with its owner ({key: tokenKey(token), tenant}): the tab's
 * sessionStorage outlives a change of account (another tab storing another
 * token, then a reload), and one account's conversation must never be painted
 * (nor continued, nor its outbox ids used) for another. load(owner) returns
 * the messages only when they are `owner`'s, and removes another account's
 * (or an older page's unowned) transcript; saves are `owner`'s from then on,
 * and nothing is saved before an owner is known.
 */
export function createTranscriptStore(storage, { key = TRANSCRIPT_KEY, limit = 200 } = {}) {
  const s = safeStorage(storage);
  let owner = null; // {key, tenant}: whose the saves are

  function read() {
    try {
      const value = JSON.parse(s.get(key) ?? "null");
      return value && typeof value === "object" && !Array.isArray(value) ? value : null;
    } catch {
      return null;
    }
  }
  const validTenant = (t) => (typeof t === "string" && t ? t : null);

  return {
    /** The stored messages when they are `who`'s ({key, tenant?}); another account's are removed. */
    load(who) {
      owner = who && typeof who.key === "string" && who.key ? { key: who.key, tenant: validTenant(who.tenant) } : null;
      const stored = read();
      const theirs = stored && stored.owner && typeof stored.owner === "object" ? stored.owner : null;
      const same =
        owner !== null &&
        theirs !== null &&
        theirs.key === owner.key &&
        !(owner.tenant && validTenant(theirs.tenant) && theirs.tenant !== owner.tenant);
      if (!same) {
        if (s.get(key) !== null) s.remove(key); // another account's (or unowned): not shown, not kept
        return [];
      }
      if (!owner.tenant) owner.tenant = validTenant(theirs.tenant);
      const list = stored.messages;
      if (!Array.isArray(list)) return [];
      return list.filter(
        (m) =>
          m &&
          (m.role === "user" || m.role === "assistant") &&
          typeof m.text === "string" &&
          typeof m.id === "number",
      );
    },
    /**
     * The daemon named the owner's account: false when the transcript was saved
     * for another tenant (the same token now another account's); it is removed then.
     */
    setTenant(tenant) {
      const t = validTenant(tenant);
      if (!owner || !t) return true;
      const before = owner.tenant;
      owner = { key: owner.key, tenant: t };
      if (before && before !== t) {
        s.remove(key);
        return false;
      }
      const stored = read();
      if (stored && stored.owner && stored.owner.key === owner.key) s.set(key, JSON.stringify({ ...stored, owner }));
      return true;
    },
    save(messages) {
      if (!owner) return; // whose is not known: not stored
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
      s.set(key, JSON.stringify({ owner, messages: slim }));
    },
    clear: () => s.remove(key),
  };
}
