import { test } from "node:test";
import assert from "node:assert/strict";
import { ApiError, createApi } from "../api.js";
import { createChat } from "../chat.js";
import { createProactive } from "../proactive.js";
import { createTokenStore, createTranscriptStore } from "../storage.js";
import { FakeStorage } from "../testlib/fake_dom.js";

const enc = new TextEncoder();
const msg = (id, text = `m${id}`) => ({ id, key: `job:x:${id}`, text, at_ms: id });

/** A scripted api: each events() call plays one script step (push these, then end or fail). */
function fakeApi({ missed = [], streams = [] } = {}) {
  const a = {
    missedCalls: [],
    eventsCalls: 0,
    async missed({ after }) {
      a.missedCalls.push(after);
      return (missed.shift() ?? []).filter((m) => m.id > after);
    },
    async events({ onMessage, signal }) {
      a.eventsCalls++;
      const step = streams.shift();
      if (!step) {
        await new Promise((resolve) => signal.addEventListener("abort", resolve));
        throw new ApiError("stopped", { kind: "aborted" });
      }
      for (const m of step.push ?? []) onMessage(m);
      if (step.fail) throw new ApiError("broken", { kind: step.fail });
    },
  };
  return a;
}

test("missed messages come first, pushed ones follow, each shown once", async () => {
  const shown = [];
  const api = fakeApi({
    missed: [[msg(1), msg(2)], [msg(2), msg(3)]],
    streams: [{ push: [msg(2), msg(3)], fail: "network" }, { push: [msg(4)] }],
  });
  const waits = [];
  const p = createProactive({ api, show: (m) => shown.push(m.id), sleep: async (ms) => waits.push(ms) });
  const done = p.start();
  while (api.eventsCalls < 3) await new Promise((r) => setTimeout(r, 1));
  p.stop();
  await done;
  assert.deepEqual(shown, [1, 2, 3, 4]);
  assert.deepEqual(api.missedCalls, [0, 3, 4]); // each reconnect asks only for newer ones
  assert.deepEqual(waits, [1000, 1000]); // a broken stream waits, a clean end resets the wait
});

test("a refused token stops listening", async () => {
  const api = fakeApi({ streams: [{ fail: "unauthorized" }] });
  const p = createProactive({ api, show: () => {}, sleep: async () => {} });
  await p.start();
  assert.equal(api.eventsCalls, 1);
});

test("messages the page already showed before a reload are not shown again", async () => {
  const shown = [];
  const api = fakeApi({ missed: [[msg(5), msg(6)]] });
  const p = createProactive({ api, show: (m) => shown.push(m.id), lastSeen: 5, sleep: async () => {} });
  const done = p.start();
  while (api.eventsCalls < 1) await new Promise((r) => setTimeout(r, 1));
  p.stop();
  await done;
  assert.deepEqual(shown, [6]);
  assert.deepEqual(api.missedCalls, [5]);
});

function sseBody(text) {
  return new ReadableStream({
    start(c) {
      c.enqueue(enc.encode(text));
      c.close();
    },
  });
}

test("the api reads the outbox list and the event stream with the bearer token", async () => {
  const seen = [];
  const fetch = async (url, init) => {
    seen.push({ url, auth: init.headers.Authorization });
    if (url.startsWith("/api/outbox")) {
      return new Response(JSON.stringify({ messages: [msg(7), { id: "x", text: 1 }] }), { status: 200 });
    }
    const body = 'event: ready\ndata: {"chat":"c"}\n\nevent: message\ndata: {"id":8,"key":"k","text":"⏰ tea","at_ms":1}\n\nevent: message\ndata: nope\n\n';
    return new Response(sseBody(body), { status: 200 });
  };
  const api = createApi({ fetch, getToken: () => "tok" });
  assert.deepEqual(await api.missed({ chat: "c", after: 3 }), [msg(7)]);
  const pushed = [];
  await api.events({ chat: "c", onMessage: (m) => pushed.push(m.text) });
  assert.deepEqual(pushed, ["⏰ tea"]);
  assert.deepEqual(seen, [
    { url: "/api/outbox?chat=c&after=3", auth: "Bearer tok" },
    { url: "/api/events?chat=c", auth: "Bearer tok" },
  ]);
});

test("the chat shows a proactive message and keeps it across a reload, once", async () => {
  const session = new FakeStorage();
  const view = { rendered: [], renderMessage: (m) => view.rendered.push({ ...m }) };
  for (const name of ["showChat", "showTokenForm", "setBusy", "setStatus", "setCommands", "clearMessages"]) {
    view[name] = () => {};
  }
  const make = (api) => {
    const tokens = createTokenStore(new FakeStorage());
    tokens.set("a".repeat(32));
    const transcript = createTranscriptStore(session);
    return createChat({ api: { ...api, commands: async () => ({ commands: [] }), health: async () => true }, view, tokens, transcript });
  };
  const first = fakeApi({ missed: [[msg(9, "⏰ call mum")]] });
  const chat = make(first);
  await chat.start();
  while (first.eventsCalls < 1) await new Promise((r) => setTimeout(r, 1));
  chat.stopListening();
  assert.deepEqual(
    chat.messages.map((m) => [m.role, m.kind, m.text]),
    [["assistant", "proactive", "⏰ call mum"]],
  );
  const second = fakeApi({ missed: [[msg(9, "⏰ call mum")]] });
  const again = make(second);
  await again.start();
  while (second.eventsCalls < 1) await new Promise((r) => setTimeout(r, 1));
  again.stopListening();
  assert.equal(again.messages.length, 1); // from the transcript, not shown twice
  assert.deepEqual(second.missedCalls, [9]);
});

test("a daemon without the endpoints (404) is not asked again", async () => {
  const api = {
    calls: 0,
    async missed() {
      api.calls++;
      throw new ApiError("HTTP 404", { kind: "http", status: 404 });
    },
    async events() {},
  };
  await createProactive({ api, show: () => {}, sleep: async () => {} }).start();
  assert.equal(api.calls, 1);
});
