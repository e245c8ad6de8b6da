/**
 * The messages on the page: an ordered list the chat controller changes
 * and the view draws, kept in sessionStorage for a fast first paint.
 *
 * createConversation({view, transcript}) returns {list, add, update,
 * replace, prepend, find, save, clear, lastSeenOutbox}. Every change is
 * drawn at once (view.renderMessage / view.clearMessages). The server's
 * history (api_history.js) is the source of truth: replace() puts it in.
 *
 * A message: {id, role, text, kind, status, error, files?, tools?, notice?, seq?}
 * status "done" | "pending" | "streaming" | "failed" | "stopped".
 */

/** A /api/history message as a page message (without its local id). */
export function fromHistory(m) {
  const msg = { seq: m.seq, role: m.role, text: m.text, kind: "", status: "done", error: "" };
  if (m.status === "stopped") msg.status = "stopped";
  if (m.status === "error") Object.assign(msg, { status: "failed", error: "This answer failed." });
  if (m.status === "summary") msg.kind = "summary";
  return msg;
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
    /** Put older messages before the first one. */
    prepend(list) {
      messages = [...list.map(stamp), ...messages];
      redraw();
    },
    /** The stored transcript (a reload's first paint); an interrupted reply is marked. */
    restore() {
      if (!transcript) return;
      messages = transcript.load().map((m) =>
        m.status === "pending" || m.status === "streaming"
          ? { ...m, status: "failed", error: m.error || "interrupted by a page reload" }
          : m,
      );
      nextId = messages.reduce((n, m) => Math.max(n, m.id + 1), 1);
      for (const m of messages) view.renderMessage(m);
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
