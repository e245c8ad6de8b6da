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
    pending: null,
    newest_post: 0,
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
  assert.deepEqual(result.files, [{ name: "a.txt", url: "/files/abc", size: 3, mime: "" }]);
});

test("normalizers tolerate junk bodies", () => {
  assert.deepEqual(normalizeHistory(null), { conversation: "", messages: [], more: false, running: false, pending: null, newest_post: 0 });
  assert.deepEqual(normalizeConversations({ conversations: "x" }), []);
});

test("history keeps what was sent, tool cards, versions, failed turns and the pending question", () => {
  const page = normalizeHistory({
    conversation: 3,
    running: true,
    pending: { text: "still asking", ts: 9 },
    messages: [
      { seq: 1, role: "user", text: "read it", status: "done", files: [{ name: "a.txt", kind: "document", mime: "text/plain", size: 5 }, { name: 3 }], versions: { index: 1, count: 2, edited: true } },
      { seq: 2, role: "assistant", text: "done", tools: [{ id: "c1", name: "me__sum", state: "error", args: "{}", result: "error: x" }, { name: "", state: "done" }] },
      { seq: null, role: "user", text: "failed one", status: "done" },
      { seq: null, role: "assistant", text: "The model server refused (ref 1a2b)", status: "error" },
      { seq: null, role: "assistant", text: "no seq, not an error" },
      { seq: 5, role: "user", text: "x", versions: { index: 3, count: 2 } },
    ],
  });
  assert.deepEqual(page.pending, { text: "still asking", ts: 9 });
  assert.deepEqual(page.messages[0].files, [{ name: "a.txt", kind: "document", mime: "text/plain", size: 5 }]);
  assert.deepEqual(page.messages[0].versions, { index: 1, count: 2, edited: true });
  assert.deepEqual(page.messages[1].tools, [{ id: "c1", name: "me__sum", state: "error", args: "{}", result: "error: x", ms: null }]);
  assert.deepEqual(page.messages.slice(2, 4).map((m) => [m.seq, m.status]), [[null, "done"], [null, "error"]]);
  assert.equal(page.messages.length, 5); // the malformed assistant row is dropped
  assert.equal(page.messages[4].versions, undefined); // an index out of range is no version
});

test("rename, delete, search, status, version and thumbnail requests", async () => {
  const { api, calls } = recorder((url) => {
    if (url.startsWith("/api/conversations/rename")) return Response.json({ title: "Trip" });
    if (url.startsWith("/api/conversations/delete")) return Response.json({ deleted: true, current: 9 });
    if (url.startsWith("/api/conversations/search"))
      return Response.json({ results: [{ conversation: 4, title: "t", current: false, hits: 2, seq: 7, role: "user", snippet: "…a Straße b", match: [3, 9] }, { conversation: "x" }, { conversation: 5, snippet: "ab", match: [1, 9] }] });
    if (url.startsWith("/api/status")) return Response.json({ model: { configured: false, describe: "offline" }, setup: { toml: "[llm]", env: "E" }, speech: { configured: true, on: false } });
    if (url.startsWith("/api/chat/version")) return Response.json({ switched: true });
    if (url.startsWith("/api/attachment")) return url.includes("seq=1") ? new Response(new Blob(["img"]), { status: 200 }) : Response.json({ error: "gone" }, { status: 404 });
    if (url === "/api/chat/edit" || url === "/api/chat/regenerate") return sseResponse([["delta", { text: "new" }], ["final", { text: "new", kind: "answer" }]]);
    return new Response("", { status: 404 });
  });
  assert.equal(await api.renameConversation({ chat: "w", conversation: "4", title: "Trip " }), "Trip");
  assert.deepEqual(calls[0].body, { chat: "w", conversation: 4, title: "Trip " });
  assert.equal(await api.deleteConversation({ chat: "w", conversation: "4" }), "9");
  const found = await api.searchConversations({ chat: "w", q: "straße" });
  assert.equal(calls[2].url, "/api/conversations/search?chat=w&q=stra%C3%9Fe");
  assert.equal(found.length, 2);
  assert.deepEqual(found[0].match, [3, 9]);
  assert.equal(found[0].snippet.slice(3, 9), "Straße");
  assert.equal(found[1].match, null); // out of the snippet: not trusted
  assert.deepEqual(await api.status({ chat: "w" }), { configured: false, model: "offline", setup: { toml: "[llm]", env: "E" }, speech: { configured: true, on: false }, maxMessageChars: null });
  assert.equal(await api.switchVersion({ chat: "w", seq: 3, index: 0 }), true);
  assert.deepEqual(calls.at(-1).body, { chat: "w", seq: 3, index: 0 });
  assert.equal(await (await api.thumbnail({ chat: "w", seq: 1, file: 0 })).text(), "img");
  assert.equal(calls.at(-1).url, "/api/attachment?chat=w&seq=1&file=0");
  assert.equal(await api.thumbnail({ chat: "w", seq: 2 }), null);
  const seen = [];
  assert.deepEqual(await api.editMessage({ chat: "w", seq: 1, text: "t", onDelta: (p) => seen.push(p) }), { text: "new", kind: "answer" });
  assert.deepEqual(calls.at(-1).body, { chat: "w", seq: 1, text: "t" });
  assert.deepEqual(await api.regenerate({ chat: "w", seq: 2 }), { text: "new", kind: "answer" });
  assert.deepEqual(calls.at(-1).body, { chat: "w", seq: 2 });
  assert.deepEqual(seen, ["new"]);
});

test("history keeps a proactive post and a command with its actions, and where to listen from", () => {
  const page = normalizeHistory({
    conversation: 3,
    newest_post: 9,
    messages: [
      { seq: null, role: "assistant", text: "⏰ tea", ts: 2, status: "done", kind: "proactive", outbox: 9, key: "job:a:1", job: "a" },
      { seq: null, role: "user", text: "/tool rm me.wc", ts: 3, status: "done", kind: "command" },
      { seq: null, role: "assistant", text: "Removed me.wc.", ts: 3, kind: "command", settled: false, actions: [{ label: "↩ Undo", command: "/tool undo me.wc" }, { label: "bad", command: "no slash" }] },
      { seq: null, role: "assistant", text: "no kind, no seq", ts: 4 },
    ],
  });
  assert.equal(page.newest_post, 9);
  assert.deepEqual(page.messages.map((m) => [m.role, m.kind, m.outbox ?? null]), [["assistant", "proactive", 9], ["user", "command", null], ["assistant", "command", null]]);
  assert.deepEqual(page.messages[2].actions, [{ label: "↩ Undo", command: "/tool undo me.wc" }]);
  assert.equal(page.messages[2].settled, false);
});
