// A reload of a chat with scheduled jobs and slash commands (the page over a fake
// daemon): the history holds the proactive posts and the commands in their place
// (bridge/channels/web/timeline.py). Each is drawn once, where it happened; a post
// is roost's ("roost · scheduled"), never the person's, and has no Edit; a command
// and its reply come back, a taken offer's buttons disabled, a pending one live.
import { test } from "node:test";
import assert from "node:assert/strict";
import { startPage } from "../app.js";
import { fakeWindow } from "../testlib/fake_dom.js";

async function until(pred) {
  while (!pred()) await new Promise((r) => setImmediate(r));
}

const POSTS = [
  { id: 7, key: "job:abc123:1", text: "🔁 cron one (job abc123)\necho: cron one", at_ms: 2000 },
  { id: 9, key: "job:rem456:1", text: "⏰ tea is ready", at_ms: 4000 },
];

const HISTORY = {
  conversation: 3,
  more: false,
  running: false,
  newest_post: 9,
  messages: [
    { seq: 1, role: "user", text: "hello", ts: 1, status: "done" },
    { seq: 2, role: "assistant", text: "echo: hello", ts: 1, status: "done" },
    { ...POSTS[0], seq: null, role: "assistant", ts: 2, status: "done", kind: "proactive", outbox: 7, job: "abc123" },
    { seq: null, role: "user", text: "/tool rm wc", ts: 3, status: "done", kind: "command" },
    {
      seq: null, role: "assistant", text: "Not removed: send /tool rm me.wc", ts: 3, status: "done", kind: "command",
      actions: [{ label: "Remove me.wc", command: "/tool rm me.wc" }], settled: true,
    },
    { seq: null, role: "user", text: "/tool rm me.wc", ts: 3.5, status: "done", kind: "command" },
    {
      seq: null, role: "assistant", text: "Removed me.wc.", ts: 3.5, status: "done", kind: "command",
      actions: [{ label: "↩ Undo removing me.wc", command: "/tool undo me.wc" }], settled: false,
    },
    { ...POSTS[1], seq: null, role: "assistant", ts: 4, status: "done", kind: "proactive", outbox: 9 },
    { seq: 3, role: "user", text: "a newer message", ts: 5, status: "done" },
    { seq: 4, role: "assistant", text: "echo: a newer message", ts: 5, status: "done" },
  ],
};

test("a reload shows the posts and commands once each, in their place, as they were", async () => {
  const outboxAfter = [];
  const fetch = async (url) => {
    if (url === "/healthz") return Response.json({ ok: true });
    if (url === "/api/commands") return Response.json({ commands: [] });
    if (url.startsWith("/api/history")) return Response.json(HISTORY);
    if (url.startsWith("/api/outbox")) {
      const after = Number(new URL(url, "http://x").searchParams.get("after"));
      outboxAfter.push(after);
      return Response.json({ messages: POSTS.filter((p) => p.id > after) });
    }
    return new Response("", { status: 404 }); // no event stream: listening ends
  };
  const win = fakeWindow({ url: "http://127.0.0.1:8787/#token=tok", fetch });
  const { ready } = startPage(win);
  await ready;
  await until(() => outboxAfter.length > 0);
  await new Promise((r) => setImmediate(r));
  const log = win.document.getElementById("messages");
  const part = (m, name) => m.children.find((c) => c.className === name);
  const drawn = log.children.map((m) => [part(m, "who").textContent, part(m, "body").textContent || part(m, "body").innerHTML]);
  const who = drawn.map(([w]) => w);
  assert.deepEqual(who, ["You", "roost", "roost · scheduled", "You", "roost", "You", "roost", "roost · scheduled", "You", "roost"]);
  const texts = drawn.map(([, t]) => t).join("\n");
  assert.equal(texts.split("echo: cron one").length, 2, "the job's answer once");
  assert.equal(texts.split("tea is ready").length, 2, "the reminder once");
  assert.deepEqual(outboxAfter, [9], "the page asks only for what came after the history");
  const editable = log.children.filter((m) => part(m, "msg-tools").children.some((b) => b.title === "Edit this message"));
  assert.deepEqual(editable.map((m) => part(m, "body").textContent), ["hello", "a newer message"]);
  const buttons = (i) => part(log.children[i], "actions").children;
  assert.deepEqual(buttons(4).map((b) => [b.textContent, b.disabled]), [["Remove me.wc", true]]);
  assert.deepEqual(buttons(6).map((b) => [b.textContent, b.disabled]), [["↩ Undo removing me.wc", false]]);
});
