/**
 * The messages on the page: an ordered list the chat controller changes
 * and the view draws, kept in sessionStorage for a fast first paint.
 *
 * createConversation({view, transcript}) returns {list, add, update,
 * remove, truncate, replace, prepend, restore, own, save, clear, lastSeenOutbox, oldestSeq}. Every change is
 * drawn at once (view.renderMessage / view.clearMessages). The server's
 * history (api_history.js) is the source of truth: replace() puts it in.
 *
 * A message: {id, role, text, kind, status, error, files?, sent?, tools?, notice?, seq?,
 * versions?, quote?}; status "done" | "pending" | "streaming" | "failed" | "stopped".
 * `files` are a reply's download links, `sent` the files the person sent
 * ({name, kind, mime, size, blob?}: the blob while this page has it).
 */

/** A /api/history message as a page message (without its local id): a failed turn's
 * answer is its error line; `sent` are the files the person sent; a proactive post
 * (a reminder, a job's run: `outboxId` when it came from the outbox) and a slash
 * command with its reply keep their kind (neither is edited nor answered again);
 * a command reply's one-tap actions come back, `settled` once the offer was taken. */
export function fromHistory(m) {
  const msg = { seq: m.seq, role: m.role, text: m.text, kind: "", status: "done", error: "" };
  if (m.kind === "proactive" || m.kind === "command") msg.kind = m.kind;
  if (m.kind === "proactive" && Number.isInteger(m.outbox)) msg.outboxId = m.outbox;
  if (m.kind === "proactive" && typeof m.job === "string" && m.job) msg.job = m.job;
  if (Array.isArray(m.actions) && m.actions.length) {
    msg.actions = m.actions;
    if (m.settled) msg.settled = true;
  }
  if (m.status === "stopped") msg.status = "stopped";
  if (m.status === "error") Object.assign(msg, { status: "failed", text: "", error: m.text || "This answer failed." });
  if (m.status === "summary") msg.kind = "summary";
  if (m.files) msg.sent = m.files;
  if (m.tools) msg.tools = m.tools;
  if (m.versions) msg.versions = m.versions;
  if (m.quote) msg.quote = m.quote;
  return msg;
}

/**
 * Where the arrows between versions go: on the person's message when a version
 * asked something else (an edit), on the answer when only the answer differs
 * (regenerated). Returns the list with `versions` moved where it is shown.
 */
export function placeVersions(list) {
  const out = list.map((m) => ({ ...m }));
  for (let i = 0; i < out.length - 1; i++) {
    const m = out[i];
    if (m.role === "user" && m.versions && !m.versions.edited && out[i + 1].role === "assistant") {
      out[i + 1].versions = m.versions;
      delete m.versions;
    }
  }
  return out;
}

/**
 * What a turn's final reply changes in its message, and the status line: a
 * stopped answer is marked once (by its status, the daemon's mark taken off);
 * an error is a failed turn, its reason the error line with Retry, as after a
 * reload; anything else is done.
 */
export function finalChanges(result, ready = "Ready") {
  const clean = { kind: "", error: "", notice: "" };
  if (result.kind === "stopped") {
    return { changes: { ...clean, text: withoutStopMark(result.text), status: "stopped" }, status: ["Stopped", "ok"] };
  }
  if (result.kind === "error") {
    return { changes: { ...clean, text: "", status: "failed", error: result.text }, status: ["The daemon reported an error", "error"] };
  }
  const { text, kind, files, actions } = result;
  const unstored = result.unstored === true; // the daemon did not store it: no place among the turns
  return { changes: { ...clean, text, kind, files, actions, unstored, status: "done" }, status: [ready, "ok"] };
}

/** A stopped answer's text without the daemon's mark (the page marks it once, by its status). */
export function withoutStopMark(text) {
  const s = String(text ?? "");
  if (!s.endsWith("[stopped]")) return s;
  return s.slice(0, -"[stopped]".length).trimEnd().replace(/\s*…$/, "");
}

export function createConversation({ view, transcript = null }) {
  let messages = [];
  let nextId = 1;

  const stamp = (msg) => ({ id: nextId++, kind: "", status: "done", error: "", ...msg });

  function redraw() {
    view.clearMessages();
    for (const m of messages) view.renderMessage(m);
  }

  return {
    get list() {
      return messages;
    },
    add(msg) {
      const full = stamp(msg);
      messages.push(full);
      view.renderMessage(full);
      return full;
    },
    update(msg, changes) {
      Object.assign(msg, changes);
      view.renderMessage(msg);
    },
    remove(msg) {
      messages = messages.filter((m) => m !== msg);
      redraw();
    },
    /** Show `list` (page messages without ids) instead of what is shown. */
    replace(list) {
      messages = list.map(stamp);
      redraw();
    },
    /** Drop `msg` and every message after it. */
    truncate(msg) {
      const i = messages.indexOf(msg);
      if (i < 0) return;
      messages = messages.slice(0, i);
      redraw();
    },
    /** Put older messages before the first one. */
    prepend(list) {
      messages = [...list.map(stamp), ...messages];
      redraw();
    },
    /**
     * The stored transcript when it is `owner`'s ({key, tenant?}: the account
     * signed in; a reload's first paint), instead of what is shown; another
     * account's is neither shown nor kept. An interrupted reply is marked.
     */
    restore(owner) {
      if (!transcript) return;
      messages = transcript.load(owner).map((m) =>
        m.status === "pending" || m.status === "streaming"
          ? { ...m, status: "failed", error: m.error || "interrupted by a page reload" }
          : m,
      );
      nextId = messages.reduce((n, m) => Math.max(n, m.id + 1), 1);
      redraw();
    },
    /** The daemon named the account: false when the restored transcript was another tenant's. */
    own(tenant) {
      return transcript && typeof transcript.setTenant === "function" ? transcript.setTenant(tenant) : true;
    },
    save() {
      if (transcript) transcript.save(messages.filter((m) => m.status !== "pending"));
    },
    clear() {
      messages = [];
      if (transcript) transcript.clear();
      view.clearMessages();
    },
    /** The newest proactive (outbox) id shown. */
    lastSeenOutbox() {
      return messages.reduce((n, m) => Math.max(n, m.outboxId || 0), 0);
    },
    /** The oldest server sequence number shown, or null. */
    oldestSeq() {
      const m = messages.find((x) => Number.isInteger(x.seq));
      return m ? m.seq : null;
    },
  };
}
