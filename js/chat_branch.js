/**
 * Edit a sent message, ask for another answer, switch between the versions,
 * as people know it from ChatGPT: the old version is kept on the daemon
 * (POST /api/chat/edit, /api/chat/regenerate, /api/chat/version) and arrows
 * switch between them. No DOM.
 *
 * createBranching({api, chatId, convo, history, follow, canRun, view}) returns
 * {edit(id, text), regenerate(id), switchVersion(id, index)}, each resolving
 * to false when nothing was done (a turn runs, a past conversation is shown,
 * the message has no place in the daemon's history). The page shows at once
 * what will happen (the later messages go, the new answer streams in), then
 * reloads the history from the daemon, the source of truth (its versions).
 */

export function createBranching({ api, chatId, convo, history, follow, canRun, view }) {
  const find = (id) => convo.list.find((m) => m.id === id);
  const usable = (msg) => Boolean(msg) && Number.isInteger(msg.seq) && canRun();

  async function rerun(from, question, runner) {
    convo.truncate(from);
    if (question) convo.add(question);
    const reply = convo.add({ role: "assistant", text: "", status: "pending", tools: [] });
    reply.request = question?.text ?? "";
    await follow(reply, runner);
    await history.load({ attach: false }); // the daemon's view: new seqs, the versions
    return true;
  }

  /** Send `text` in place of the person's message `id`; the old one stays a version. */
  async function edit(id, rawText) {
    const msg = find(id);
    const text = typeof rawText === "string" ? rawText.trim() : "";
    if (!usable(msg) || msg.role !== "user" || !text || typeof api.editMessage !== "function") return false;
    if (text === msg.text.trim()) return false; // nothing changed
    const question = { role: "user", text, ...(msg.sent ? { sent: msg.sent } : {}) };
    return rerun(msg, question, (handlers) => api.editMessage({ chat: chatId, seq: msg.seq, text, ...handlers }));
  }

  /** Another answer to the question of answer `id`; the old one stays a version. */
  async function regenerate(id) {
    const msg = find(id);
    if (!usable(msg) || msg.role !== "assistant" || typeof api.regenerate !== "function") return false;
    return rerun(msg, null, (handlers) => api.regenerate({ chat: chatId, seq: msg.seq, ...handlers }));
  }

  /** Show version `index` (0-based) of the turn message `id` belongs to. */
  async function switchVersion(id, index) {
    const msg = find(id);
    const v = msg?.versions;
    if (!usable(msg) || !v || !Number.isInteger(index) || index < 0 || index >= v.count || index === v.index) {
      return false;
    }
    try {
      await api.switchVersion({ chat: chatId, seq: msg.seq, index });
    } catch (err) {
      view.setStatus(`Could not switch versions: ${err.message}`, "error");
      return false;
    }
    await history.load({ attach: false });
    return true;
  }

  return { edit, regenerate, switchVersion };
}
