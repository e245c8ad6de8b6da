// The tab's stored transcript (sessionStorage "roost.transcript") is its account's:
// sessionStorage outlives a change of account (another tab stores another token, this
// one reloads), and one account's conversation must never be painted, continued or
// saved again for another, nor its outbox ids stand for the other's missed messages.
import { test } from "node:test";
import assert from "node:assert/strict";
import { startPage } from "../app.js";
import { FakeStorage, fakeWindow } from "../testlib/fake_dom.js";

const ALICE = "alice-token-0123456789";
const BOB = "bob-token-0123456789ab";
const enc = new TextEncoder();
const sse = (events) =>
  new Response(
    new ReadableStream({
      start(c) {
        c.enqueue(enc.encode(events.map(([e, d]) => `event: ${e}\ndata: ${JSON.stringify(d)}\n\n`).join("")));
        c.close();
      },
    }),
    { headers: { "Content-Type": "text/event-stream" } },
  );

/**
 * Two tenants; `history: false`: /api/history fails (503, a transient failure);
 * each tenant has one missed proactive message (alice's id 9, bob's id 3).
 */
function daemon({ history = false, tenants = { [ALICE]: "alice", [BOB]: "bob" } } = {}) {
  const sent = [];
  const outbox = [];
  const outboxes = { alice: [{ id: 9, key: "k9", text: "alice: dentist at 3", at_ms: 1 }], bob: [{ id: 3, key: "k3", text: "bob: call mum", at_ms: 1 }] };
  const fetch = async (url, init = {}) => {
    if (url === "/healthz") return Response.json({ ok: true });
    const tenant = tenants[(init.headers?.Authorization ?? "").replace(/^Bearer /, "")];
    if (!tenant) return new Response("", { status: 401 });
    if (url === "/api/commands") return Response.json({ commands: [] });
    if (url.startsWith("/api/status")) return Response.json({ model: { configured: true }, speech: {}, tenant });
    if (url.startsWith("/api/history")) {
      if (!history) return new Response("busy", { status: 503 });
      return Response.json({ conversation: `c-${tenant}`, messages: [], more: false, running: false });
    }
    if (url.startsWith("/api/outbox")) {
      const after = Number(new URL(url, "http://x").searchParams.get("after"));
      outbox.push({ tenant, after });
      return Response.json({ messages: outboxes[tenant].filter((m) => m.id > after) });
    }
    if (url === "/api/chat/stream") {
      sent.push({ tenant, text: JSON.parse(init.body).text });
      return sse([["final", { text: `noted for ${tenant}`, kind: "answer" }]]);
    }
    return new Response("", { status: 404 }); // no /api/events: the listener stops after the outbox
  };
  return { fetch, sent, outbox };
}

async function until(pred) {
  for (let i = 0; !pred(); i++) {
    if (i > 20000) throw new Error("timed out");
    await new Promise((r) => setImmediate(r));
  }
}

/** Load the page in a tab: `local` the browser's localStorage, `session` the tab's sessionStorage. */
async function load(d, local, session) {
  const win = fakeWindow({ url: "http://127.0.0.1:8787/", fetch: d.fetch, localStorage: local, sessionStorage: session });
  const page = startPage(win);
  await page.ready;
  const text = () => win.document.getElementById("messages").textContent;
  return { win, page, text, $: (id) => win.document.getElementById(id) };
}

test("a reload after another tab switched to bob shows none of alice's conversation, even when bob's history fails", async () => {
  const local = new FakeStorage();
  const session = new FakeStorage();
  const d = daemon();
  local.setItem("roost.token", ALICE);
  const a = await load(d, local, session);
  await until(() => d.outbox.length === 1);
  await a.page.chat.send("alice: my bank PIN is 4711");
  assert.match(session.getItem("roost.transcript"), /4711/, "alice's own reload would show it");
  assert.doesNotMatch(session.getItem("roost.transcript"), new RegExp(ALICE), "the token is not stored with it");
  // another tab signs in as bob; this tab is reloaded (the same sessionStorage)
  local.setItem("roost.token", BOB);
  const b = await load(d, local, session);
  assert.equal(b.$("account").textContent, "as bob");
  await until(() => d.outbox.length === 2);
  assert.doesNotMatch(JSON.stringify(b.page.chat.messages), /4711|dentist/, "alice's conversation is not shown to bob");
  assert.doesNotMatch(b.text(), /4711|dentist/);
  assert.deepEqual(d.outbox[1], { tenant: "bob", after: 0 }, "bob's missed messages are not skipped by alice's outbox id");
  await until(() => /call mum/.test(b.text()));
  await b.page.chat.send("and continuing that thought");
  assert.deepEqual(d.sent.map((s) => s.tenant), ["alice", "bob"]);
  const stored = session.getItem("roost.transcript");
  assert.doesNotMatch(stored, /4711|dentist/, "alice's words are not saved again as bob's");
  assert.match(stored, /continuing that thought/);
  // and back as alice: bob's conversation is not hers either
  local.setItem("roost.token", ALICE);
  const again = await load(d, local, session);
  assert.equal(again.$("account").textContent, "as alice");
  assert.doesNotMatch(JSON.stringify(again.page.chat.messages), /continuing|call mum/);
});

test("the same account's reload still shows its stored conversation when the history fails", async () => {
  const local = new FakeStorage();
  const session = new FakeStorage();
  const d = daemon();
  local.setItem("roost.token", ALICE);
  const a = await load(d, local, session);
  await until(() => d.outbox.length === 1);
  await a.page.chat.send("remember the milk");
  const b = await load(d, local, session);
  assert.match(JSON.stringify(b.page.chat.messages), /remember the milk/);
  await until(() => d.outbox.length === 2);
  assert.deepEqual(d.outbox[1], { tenant: "alice", after: 9 }, "her own outbox id: shown once");
});

test("a token that now names another tenant does not keep the conversation saved under it", async () => {
  const local = new FakeStorage();
  const session = new FakeStorage();
  local.setItem("roost.token", ALICE);
  const d1 = daemon();
  const a = await load(d1, local, session);
  await until(() => d1.outbox.length === 1);
  await a.page.chat.send("alice: my bank PIN is 4711");
  // the daemon's configuration now gives this token to another tenant
  const d2 = daemon({ tenants: { [ALICE]: "bob" } });
  const b = await load(d2, local, session);
  assert.equal(b.$("account").textContent, "as bob");
  await until(() => d2.outbox.length === 1);
  assert.doesNotMatch(JSON.stringify(b.page.chat.messages), /4711/);
  assert.doesNotMatch(b.text(), /4711/);
  assert.deepEqual(d2.outbox[0], { tenant: "bob", after: 0 });
  assert.doesNotMatch(session.getItem("roost.transcript") ?? "", /4711/);
});
