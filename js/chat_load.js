/**
 * What the page loads once signed in, besides the history: the command list
 * (hints and the welcome), the daemon's health (the status line) and its
 * status (GET /api/status: a banner before the first message when no model
 * is configured). No DOM.
 *
 * createLoader({api, view, chatId, isIdle, onRefused}) returns {commands(),
 * health(), status(), list, limit}; `list` is the last command list loaded,
 * `limit` the daemon's message limit in characters from the last status
 * (`[limits] max_message_chars`; null: not known, the daemon alone decides).
 * A refused token calls onRefused(); other failures leave the chat working.
 */

import { ApiError } from "./api.js";
import { normalizeCommands } from "./commands.js";

export const REFUSED =
  "The daemon refused this access token (a wrong or an old one). On the machine roost runs on, “roost web-token --link” prints the current link: open it, or paste its token here.";

export function createLoader({ api, view, chatId, isIdle, onRefused }) {
  let list = [];
  let limit = null;
  const refused = (err) => err instanceof ApiError && err.kind === "unauthorized";

  async function commands() {
    try {
      list = normalizeCommands(await api.commands());
      view.setCommands(list);
    } catch (err) {
      if (refused(err)) onRefused(REFUSED);
      // Otherwise hints are a convenience: the chat works without them.
    }
  }

  async function health() {
    const ok = await api.health();
    if (isIdle()) {
      view.setStatus(ok ? `Connected · chat “${chatId}”` : "The daemon is not answering", ok ? "ok" : "error");
    }
    return ok;
  }

  /** The no-model banner, shown before anyone asks (an older daemon has no /api/status). */
  async function status() {
    if (typeof api.status !== "function") return null;
    try {
      const s = await api.status({ chat: chatId });
      view.showSetup?.(s.configured ? null : s.setup, s.model);
      limit = s.maxMessageChars;
      return s;
    } catch (err) {
      if (refused(err)) onRefused(REFUSED);
      return null;
    }
  }

  return {
    commands,
    health,
    status,
    get list() {
      return list;
    },
    get limit() {
      return limit;
    },
    clear() {
      list = [];
      view.setCommands([]);
    },
  };
}
