// A reload of a chat whose model answers offered one-tap actions (the page over a fake
// daemon): the history gives an answer its `actions` back (bridge/channels/web/timeline.py,
// kept by kept.py), so the buttons are drawn under it again: live while the offer waits,
// disabled once it was taken; an answer without offers has none.
import { test } from "node:test";
import assert from "node:assert/strict";
import { startPage } from "../app.js";
import { fakeWindow } from "../testlib/fake_dom.js";

async function until(pred) {
  while (!pred()) await new Promise((r) => setImmediate(r));
}

const KEEP = [
  { label: "Keep as memory", command: "/yes t6p6" },
  { label: "Keep as steering", command: "/yes t6p6 steering" },
];
const UNDO = [{ label: "↩ Undo memory 'gym'", command: "/memory undo gym" }];

const HISTORY = {
  conversation: 3,
  more: false,
  running: false,
  newest_post: 0,
  messages: [
    { seq: 1, role: "user", text: "from now on always answer in German", ts: 1, status: "done" },
    { seq: 2, role: "assistant", text: "echo … 📌 Keep …?", ts: 1, status: "done", actions: KEEP, settled: true },
    { seq: null, role: "user", text: "/yes t6p6", ts: 2, status: "done", kind: "command" },
    { seq: null, role: "assistant", text: "Kept.", ts: 2, status: "done", kind: "command" },
    { seq: 3, role: "user", text: "remember my gym days", ts: 3, status: "done" },
    { seq: 4, role: "assistant", text: "Saved.", ts: 3, status: "done", actions: UNDO, settled: false },
    { seq: 5, role: "user", text: "thanks", ts: 4, status: "done" },
    { seq: 6, role: "assistant", text: "echo: thanks", ts: 4, status: "done" },
  ],
};

test("a reload draws an answer's offers under it: taken ones disabled, waiting ones live", async () => {
  const sent = [];
  let listed = false;
  const fetch = async (url, init) => {
    if (url === "/healthz") return Response.json({ ok: true });
    if (url === "/api/commands") return Response.json({ commands: [] });
    if (url.startsWith("/api/history")) return Response.json(HISTORY);
    if (url.startsWith("/api/outbox")) {
      listed = true;
      return Response.json({ messages: [] });
    }
    if (url.startsWith("/api/chat")) sent.push(JSON.parse(init.body).text);
    return new Response("", { status: 404 });
  };
  const win = fakeWindow({ url: "http://127.0.0.1:8787/#token=tok", fetch });
  const { ready } = startPage(win);
  await ready;
  const log = win.document.getElementById("messages");
  await until(() => listed);
  await new Promise((r) => setImmediate(r));
  assert.equal(log.children.length, HISTORY.messages.length);
  const part = (m, name) => m.children.find((c) => c.className === name);
  const buttons = (i) => part(log.children[i], "actions").children;
  assert.deepEqual(buttons(1).map((b) => [b.textContent, b.disabled]), [["Keep as memory", true], ["Keep as steering", true]]);
  assert.deepEqual(buttons(5).map((b) => [b.textContent, b.disabled]), [["↩ Undo memory 'gym'", false]]);
  assert.deepEqual(buttons(7), []);
  buttons(5)[0].dispatch("click");
  await until(() => sent.length > 0);
  assert.equal(sent[0], "/memory undo gym", "pressing it sends the offer's command");
});
