/**
 * Messages roost sends first (reminders, scheduled answers) on the chat page.
 *
 * No DOM. createProactive({api, chatId, show, lastSeen, sleep}) returns
 * {start(), stop()}. start() first asks for what the page missed while it was
 * closed (GET /api/outbox after the newest id it has shown), then listens on
 * GET /api/events; when the stream ends or breaks it waits (1 s, doubling up
 * to 30 s), asks for what it missed meanwhile and listens again. Every
 * message goes to show(message) once: ids already shown are skipped, so a
 * message both pushed and listed appears one time. A refused token stops it,
 * and so does a daemon without these endpoints (404).
 */

import { ApiError } from "./api.js";

const FIRST_WAIT_MS = 1000;
const MAX_WAIT_MS = 30000;

const defaultSleep = (ms, signal) =>
  new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    timer?.unref?.(); // node (tests): a waiting reconnect does not keep the process alive
    signal?.addEventListener("abort", () => {
      clearTimeout(timer);
      resolve();
    });
  });

export function createProactive({ api, chatId = "default", show, lastSeen = 0, sleep = defaultSleep }) {
  let newest = lastSeen;
  const seen = new Set();
  let controller = null;
  let running = false;

  function take(message) {
    if (seen.has(message.id) || message.id <= lastSeen) return;
    seen.add(message.id);
    newest = Math.max(newest, message.id);
    show(message);
  }

  async function catchUp(signal) {
    const list = await api.missed({ chat: chatId, after: newest, signal });
    for (const m of list) take(m);
  }

  async function loop(signal) {
    let wait = FIRST_WAIT_MS;
    while (!signal.aborted) {
      try {
        await catchUp(signal);
        await api.events({ chat: chatId, signal, onMessage: take });
        wait = FIRST_WAIT_MS; // a stream that ended cleanly: reconnect soon
      } catch (err) {
        if (err instanceof ApiError && (err.kind === "unauthorized" || err.kind === "aborted")) return;
        if (err instanceof ApiError && err.kind === "http" && err.status === 404) return;
      }
      if (signal.aborted) return;
      await sleep(wait, signal);
      wait = Math.min(MAX_WAIT_MS, wait * 2);
    }
  }

  return {
    /** Resolves when listening ends (stop(), or the token was refused). */
    start() {
      if (running) return Promise.resolve();
      running = true;
      controller = new AbortController();
      return loop(controller.signal).finally(() => {
        running = false;
      });
    },
    stop() {
      if (controller) controller.abort();
    },
    get newest() {
      return newest;
    },
  };
}
