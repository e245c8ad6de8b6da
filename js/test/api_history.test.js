import { test } from "node:test";
import assert from "node:assert/strict";
import { ApiError, createApi } from "../api.js";
import { normalizeConversations, normalizeHistory } from "../api_history.js";

const enc = new TextEncoder();

function sseResponse(events, status = 200) {
  const text = events.map(([ev, data]) => `event: ${ev}\ndata: ${typeof data === "string" ? data : JSON.stringify(data)}\n\n`).join("");
  return new Response(
    new ReadableStream({
      start(c) {
        c.enqueue(enc.encode(text));
        c.close();
      },
    }),
    { status, headers: { "Content-Type": "text/event-stream" } },
  );
}

function recorder(respond) {
  const calls = [];
  const api = createApi({
    fetch: async (url, init) => {
      calls.push({ url, method: init.method, body: init.body ? JSON.parse(init.body) : undefined, auth: init.headers.Authorization });
      return respond(url, init);
    },
    getToken: () => "tok",
  });
  return { api, calls };
}

test("history: query string, paging parameters, limit capped, malformed messages dropped", async () => {
  const { api, calls } = recorder(() =>
    Response.json({
      conversation: 12,
      messages: [
        { seq: 1, role: "user", text: "q", ts: 1.5, status: "done" },
        { seq: 2, role: "system", text: "no" },
        { seq: "3", role: "assistant", text: "no" },
        { seq: 4, role: "assistant", text: "a", status: "weird" },
      ],
      more: 1,
      running: false,
    }),
  );
  const page = await api.history({ chat: "work", conversation: "c 1", before: 9, limit: 999 });
  assert.equal(calls[0].url, "/api/history?chat=work&conversation=c+1&before=9&limit=200");
  assert.equal(calls[0].auth, "Bearer tok");
  assert.deepEqual(page, {
    conversation: "12",
    messages: [
      { seq: 1, role: "user", text: "q", ts: 1.5, status: "done" },
      { seq: 4, role: "assistant", text: "a", ts: 0, status: "done" },
    ],
    more: true,
    running: false,
  });
  await api.history({});
  assert.equal(calls[1].url, "/api/history?chat=default");
});

test("a missing route is an http 404 ApiError", async () => {
  const { api } = recorder(() => new Response("not found", { status: 404 }));
  await assert.rejects(api.history({ chat: "c" }), (e) => e instanceof ApiError && e.kind === "http" && e.status === 404);
  await assert.rejects(api.stopChat({ chat: "c" }), (e) => e.status === 404);
});

test("conversations, new chat and stop speak the contract", async () => {
  const { api, calls } = recorder((url) => {
    if (url.startsWith("/api/conversations")) {
      return Response.json({
        conversations: [
          { id: "b", started_at: 2, updated_at: 3, turns: 4, title: "second", current: true },
          { id: 7, started_at: 1, updated_at: 1, turns: 1, title: "first", current: false },
          { title: "no id" },
        ],
      });
    }
    if (url === "/api/chat/new") return Response.json({ conversation: "c9" });
    return Response.json({ stopped: true });
  });
  assert.deepEqual(await api.conversations({ chat: "w" }), [
    { id: "b", startedAt: 2, updatedAt: 3, turns: 4, title: "second", current: true },
    { id: "7", startedAt: 1, updatedAt: 1, turns: 1, title: "first", current: false },
  ]);
  assert.equal(await api.newChat({ chat: "w" }), "c9");
  assert.equal(await api.stopChat({ chat: "w" }), true);
  assert.deepEqual(
    calls.map((c) => [c.method, c.url, c.body]),
    [
      ["GET", "/api/conversations?chat=w", undefined],
      ["POST", "/api/chat/new", { chat: "w" }],
      ["POST", "/api/chat/stop", { chat: "w" }],
    ],
  );
});

test("attach: 204 is null; a stream replays the text so far, then follows to the final", async () => {
  let status = 204;
  const { api, calls } = recorder(() =>
    status === 204 ? new Response(null, { status: 204 }) : sseResponse([["delta", { text: "so far" }], ["delta", { text: " more" }], ["final", { text: "so far more.", kind: "answer" }]]),
  );
  assert.equal(await api.attach({ chat: "w" }), null);
  assert.equal(calls[0].url, "/api/chat/attach?chat=w");
  status = 200;
  const seen = [];
  const result = await api.attach({ chat: "w", onDelta: (_p, soFar) => seen.push(soFar) });
  assert.deepEqual(seen, ["so far", "so far more"]);
  assert.deepEqual(result, { text: "so far more.", kind: "answer" });
});

test("the chat stream passes tool, retry and info events on and skips malformed ones", async () => {
  const { api } = recorder(() =>
    sseResponse([
      ["info", { model: "qwen" }],
      ["retry", { attempt: 2, max: 4, reason: "the model server is busy" }],
      ["tool", { id: "x", name: "me.sum", state: "start", args: "[1]" }],
      ["tool", "not json"],
      ["tool", { id: "x", name: "me.sum", state: "done", result: "1", ms: 3 }],
      ["delta", { text: "1" }],
      ["final", { text: "1", kind: "answer", files: [{ name: "a.txt", url: "/files/abc", size: 3 }] }],
    ]),
  );
  const events = [];
  const result = await api.streamChat("sum", { chat: "w", onProgress: (e) => events.push(e) });
  assert.deepEqual(events.map((e) => e.type), ["info", "retry", "tool", "tool"]);
  assert.equal(events[3].ms, 3);
  assert.deepEqual(result.files, [{ name: "a.txt", url: "/files/abc", size: 3 }]);
});

test("normalizers tolerate junk bodies", () => {
  assert.deepEqual(normalizeHistory(null), { conversation: "", messages: [], more: false, running: false });
  assert.deepEqual(normalizeConversations({ conversations: "x" }), []);
});
