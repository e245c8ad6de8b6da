// The token flow against a link for another account (a #token= link of another
// tenant on the same roost): app.js over the real index.html, a fake daemon that
// knows two tenants' tokens and answers /api/status with the token's tenant.
import { test } from "node:test";
import assert from "node:assert/strict";
import { startPage } from "../app.js";
import { FakeStorage, fakeWindow } from "../testlib/fake_dom.js";

const enc = new TextEncoder();
const ALICE = "alice-token-0123456789";
const BOB = "bob-token-0123456789ab";
const WRONG = "wrong-token-0123456789";

function sse(events) {
  const text = events.map(([ev, data]) => `event: ${ev}\ndata: ${JSON.stringify(data)}\n\n`).join("");
  return new Response(
    new ReadableStream({
      start(c) {
        c.enqueue(enc.encode(text));
        c.close();
      },
    }),
    { headers: { "Content-Type": "text/event-stream" } },
  );
}

/** A daemon with two tenants; `sent` lists {tenant, text} of every turn; `status: false`: an older daemon. */
function daemon({ status = true } = {}) {
  const tenants = { [ALICE]: "alice", [BOB]: "bob" };
  const sent = [];
  const calls = [];
  const fetch = async (url, init = {}) => {
    calls.push({ url, init });
    if (url === "/healthz") return Response.json({ ok: true });
    const tenant = tenants[(init.headers?.Authorization ?? "").replace(/^Bearer /, "")];
    if (url.startsWith("/api/status") && !status) return new Response("", { status: 404 });
    if (!tenant) return new Response("", { status: 401 });
    if (url === "/api/commands") return Response.json({ commands: [] });
    if (url.startsWith("/api/status")) return Response.json({ model: { configured: true }, speech: {}, tenant });
    if (url === "/api/chat/stream") {
      const body = JSON.parse(init.body);
      sent.push({ tenant, text: body.text });
      return sse([["final", { text: `noted for ${tenant}`, kind: "answer" }]]);
    }
    return new Response("", { status: 404 });
  };
  return { fetch, sent, calls };
}

async function until(pred) {
  for (let i = 0; !pred(); i++) {
    if (i > 20000) throw new Error("timed out");
    await new Promise((r) => setImmediate(r));
  }
}

function open(url, { storage = new FakeStorage(), d = daemon() } = {}) {
  const win = fakeWindow({ url: `http://127.0.0.1:8787/${url}`, fetch: d.fetch, localStorage: storage });
  const page = startPage(win);
  const $ = (id) => win.document.getElementById(id);
  return { win, d, storage, ...page, $ };
}

const storedAs = (token) => {
  const storage = new FakeStorage();
  storage.setItem("roost.token", token);
  return storage;
};

test("a link for another account asks, naming it; declining keeps the stored token", async () => {
  const p = open(`#token=${BOB}`, { storage: storedAs(ALICE) });
  await until(() => !p.$("switch-view").hidden);
  assert.equal(p.win.location.hash, "", "the link's token leaves the address bar at once");
  assert.match(p.$("switch-text").textContent, /This link signs this browser in as another account: “bob”\. Switch\?/);
  assert.match(p.$("switch-text").textContent, /signed in as “alice”/);
  assert.equal(p.storage.getItem("roost.token"), ALICE, "nothing is stored before the answer");
  assert.equal(p.$("composer").hidden, true);
  p.$("switch-no").dispatch("click");
  await p.ready;
  assert.equal(p.$("switch-view").hidden, true);
  assert.equal(p.storage.getItem("roost.token"), ALICE);
  assert.equal(p.$("composer").hidden, false);
  assert.equal(p.$("account").textContent, "as alice");
  assert.match(p.$("status").textContent, /Still signed in as “alice”/);
  assert.equal(await p.chat.send("my secret plans"), true);
  assert.deepEqual(p.d.sent, [{ tenant: "alice", text: "my secret plans" }]);
});

test("accepting the switch stores the link's token and the header names the new account", async () => {
  const p = open(`#token=${BOB}`, { storage: storedAs(ALICE) });
  await until(() => !p.$("switch-view").hidden);
  p.$("switch-yes").dispatch("click");
  await p.ready;
  assert.equal(p.storage.getItem("roost.token"), BOB);
  assert.equal(p.$("account").textContent, "as bob");
  await p.chat.send("hello bob");
  assert.deepEqual(p.d.sent, [{ tenant: "bob", text: "hello bob" }]);
});

test("a link opened into the open page asks too; the tab goes on as alice meanwhile", async () => {
  const p = open(`#token=${ALICE}`);
  await p.ready;
  assert.equal(p.$("account").textContent, "as alice");
  p.win.location.hash = `#token=${BOB}`;
  p.win.dispatch("hashchange");
  await until(() => !p.$("switch-view").hidden);
  assert.equal(p.win.location.hash, "");
  assert.equal(p.storage.getItem("roost.token"), ALICE);
  await p.chat.send("still mine"); // (the composer is hidden; a turn started before would go on)
  p.$("switch-no").dispatch("click");
  await until(() => !p.$("composer").hidden);
  await p.chat.send("mine too");
  assert.deepEqual(p.d.sent.map((s) => s.tenant), ["alice", "alice"]);
  assert.equal(p.storage.getItem("roost.token"), ALICE);
  assert.equal(p.$("account").textContent, "as alice");
});

test("a switch accepted in the open page reloads it under the new account", async () => {
  const p = open(`#token=${ALICE}`);
  await p.ready;
  await p.chat.send("alice's words");
  let reloads = 0;
  p.win.location.reload = () => reloads++;
  p.win.location.hash = `#token=${BOB}`;
  p.win.dispatch("hashchange");
  await until(() => !p.$("switch-view").hidden);
  p.$("switch-yes").dispatch("click");
  await until(() => reloads === 1);
  assert.equal(p.storage.getItem("roost.token"), BOB);
  assert.equal(p.win.sessionStorage.getItem("roost.transcript"), null, "alice's conversation is not painted for bob");
  assert.equal(await p.chat.send("after"), false, "nothing is sent before the reload");
});

test("another tab storing another token does not switch this open tab", async () => {
  const p = open(`#token=${ALICE}`);
  await p.ready;
  // another tab of the same browser stored bob's token; its storage event has not arrived yet
  p.storage.setItem("roost.token", BOB);
  await p.chat.send("typed before the notice");
  assert.deepEqual(p.d.sent, [{ tenant: "alice", text: "typed before the notice" }]);
  for (const fn of p.win.listeners.get("storage")) fn({ key: "roost.token", newValue: BOB });
  await until(() => !p.$("account-notice").hidden);
  assert.match(p.$("account-notice-text").textContent, /signed in as “bob” in another tab/);
  assert.equal(p.$("composer").hidden, true);
  assert.equal(await p.chat.send("typed after"), false);
  assert.equal(p.d.sent.length, 1, "nothing went to bob");
  let reloads = 0;
  p.win.location.reload = () => reloads++;
  p.$("account-reload").dispatch("click");
  assert.equal(reloads, 1);
});

test("a link with a refused token keeps the stored one instead of signing out", async () => {
  const p = open(`#token=${WRONG}`, { storage: storedAs(ALICE) });
  await p.ready;
  assert.equal(p.$("switch-view").hidden, true);
  assert.equal(p.storage.getItem("roost.token"), ALICE);
  assert.equal(p.$("token-view").hidden, true);
  assert.equal(p.$("composer").hidden, false);
  assert.match(p.$("status").textContent, /link's access token was refused/);
  await p.chat.send("still here");
  assert.deepEqual(p.d.sent, [{ tenant: "alice", text: "still here" }]);
});

test("a refused link into the open page keeps it signed in", async () => {
  const p = open(`#token=${ALICE}`);
  await p.ready;
  p.win.location.hash = `#token=${WRONG}`;
  p.win.dispatch("hashchange");
  await until(() => /refused/.test(p.$("status").textContent));
  assert.equal(p.storage.getItem("roost.token"), ALICE);
  assert.equal(p.$("token-view").hidden, true);
  await p.chat.send("on");
  assert.deepEqual(p.d.sent, [{ tenant: "alice", text: "on" }]);
});

test("with no stored token the link signs in as before, and the header says who", async () => {
  const p = open(`#token=${BOB}`);
  await p.ready;
  assert.equal(p.$("switch-view").hidden, true);
  assert.equal(p.storage.getItem("roost.token"), BOB);
  assert.equal(p.$("account").hidden, false);
  assert.equal(p.$("account").textContent, "as bob");
});

test("the same link again, or a stored token that no longer works, needs no question", async () => {
  const same = open(`#token=${ALICE}`, { storage: storedAs(ALICE) });
  await same.ready;
  assert.equal(same.$("switch-view").hidden, true);
  const stale = open(`#token=${BOB}`, { storage: storedAs(WRONG) });
  await stale.ready;
  assert.equal(stale.$("switch-view").hidden, true);
  assert.equal(stale.storage.getItem("roost.token"), BOB);
  assert.equal(stale.$("account").textContent, "as bob");
});

test("a daemon that cannot name the tenant still asks, without a name", async () => {
  const p = open(`#token=${BOB}`, { storage: storedAs(ALICE), d: daemon({ status: false }) });
  await until(() => !p.$("switch-view").hidden);
  assert.match(p.$("switch-text").textContent, /This link signs this browser in as another account\. Switch\?/);
  assert.equal(p.storage.getItem("roost.token"), ALICE);
  p.$("switch-no").dispatch("click");
  await p.ready;
  assert.equal(p.storage.getItem("roost.token"), ALICE);
});
