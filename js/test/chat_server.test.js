// The chat controller against a daemon that keeps the history: load, page
// back, re-attach, stop on the daemon, new chat, past conversations.
import { test } from "node:test";
import assert from "node:assert/strict";
import { ApiError } from "../api.js";
import { createChat } from "../chat.js";
import { createTokenStore, createTranscriptStore, tokenKey } from "../storage.js";
import { FakeStorage } from "../testlib/fake_dom.js";

function recordingView() {
  const v = {
    rendered: new Map(),
    order: [],
    more: null,
    readOnly: undefined,
    conversations: null,
    status: null,
    busy: false,
    showChat() {},
    showTokenForm(m) {
      v.form = m;
    },
    renderMessage(m) {
      if (!v.rendered.has(m.id)) v.order.push(m.id);
      v.rendered.set(m.id, { ...m });
    },
    clearMessages() {
      v.rendered.clear();
      v.order = [];
    },
    setBusy(b) {
      v.busy = b;
    },
    setStatus(text, tone) {
      v.status = { text, tone };
    },
    setCommands() {},
    setMore(m) {
      v.more = m;
    },
    setReadOnly(r) {
      v.readOnly = r;
    },
    showConversations(list) {
      v.conversations = list;
    },
  };
  v.texts = () => v.order.map((id) => v.rendered.get(id).text);
  return v;
}

const msg = (seq, role, text, status = "done") => ({ seq, role, text, ts: 1_800_000_000 + seq, status });
const notFound = () => new ApiError("HTTP 404", { kind: "http", status: 404 });

function serverApi(overrides = {}) {
  const api = {
    log: [],
    async commands() {
      return { commands: [] };
    },
    async health() {
      return true;
    },
    async history(opts) {
      api.log.push(["history", opts]);
      return { conversation: "c2", messages: [msg(3, "user", "q2"), msg(4, "assistant", "a2")], more: true, running: false };
    },
    async streamChat(text, opts) {
      api.log.push(["stream", text]);
      return { text: `answer to ${text}`, kind: "answer" };
    },
    ...overrides,
  };
  return api;
}

function setup(api, { session = new FakeStorage() } = {}) {
  const tokens = createTokenStore(new FakeStorage());
  tokens.set("tok");
  const view = recordingView();
  const chat = createChat({ api, view, tokens, transcript: createTranscriptStore(session), chatId: "work" });
  return { chat, view, session };
}

test("the daemon's history replaces the stored transcript; load earlier pages back", async () => {
  const session = new FakeStorage();
  session.setItem("roost.transcript", JSON.stringify({ owner: { key: tokenKey("tok") }, messages: [{ id: 1, role: "user", text: "stale", status: "done" }] }));
  const api = serverApi();
  const { chat, view } = setup(api, { session });
  await chat.start();
  assert.deepEqual(view.texts(), ["q2", "a2"]);
  assert.deepEqual(api.log[0], ["history", { chat: "work", limit: 50 }]);
  assert.equal(view.more, true);
  api.history = async (opts) => {
    api.log.push(["history", opts]);
    return { conversation: "c2", messages: [msg(1, "user", "q1"), msg(2, "assistant", "a1", "stopped")], more: false, running: false };
  };
  assert.equal(await chat.loadEarlier(), true);
  assert.deepEqual(api.log.at(-1), ["history", { chat: "work", limit: 50, before: 3, conversation: "c2" }]);
  assert.deepEqual(view.texts(), ["q1", "a1", "q2", "a2"]);
  assert.equal(chat.messages[1].status, "stopped");
  assert.equal(view.more, false);
  assert.equal(await chat.loadEarlier(), false, "nothing more to load");
});

test("history statuses: error is a failed reply, summary a marked one", async () => {
  const api = serverApi({
    history: async () => ({
      conversation: "c",
      messages: [msg(1, "assistant", "earlier, in short", "summary"), msg(2, "user", "q"), msg(3, "assistant", "", "error")],
      more: false,
      running: false,
    }),
  });
  const { chat } = setup(api);
  await chat.start();
  assert.deepEqual(
    chat.messages.map((m) => [m.kind, m.status, m.error]),
    [["summary", "done", ""], ["", "done", ""], ["", "failed", "This answer failed."]],
  );
});

test("a daemon without /api/history keeps the stored transcript", async () => {
  const session = new FakeStorage();
  session.setItem("roost.transcript", JSON.stringify({ owner: { key: tokenKey("tok") }, messages: [{ id: 7, role: "user", text: "kept", status: "done" }] }));
  const api = serverApi({
    history: async () => {
      throw notFound();
    },
  });
  const { chat, view } = setup(api, { session });
  await chat.start();
  assert.deepEqual(view.texts(), ["kept"]);
  assert.equal(view.status.tone, "ok");
});

test("a reload while an answer runs re-attaches and follows it to the end", async () => {
  let push;
  const api = serverApi({
    history: async () => ({
      conversation: "c",
      messages: [msg(1, "user", "earlier")],
      more: false,
      running: true,
      pending: { text: "long question", ts: 2 },
    }),
    attach: ({ chat, onDelta, onProgress }) =>
      new Promise((resolve) => {
        assert.equal(chat, "work");
        push = { onDelta, onProgress, resolve };
      }),
  });
  const { chat, view } = setup(api);
  await chat.start();
  assert.equal(chat.busy, true);
  push.onProgress({ type: "info", model: "m-large" });
  push.onDelta("so far", "so far");
  assert.equal(chat.messages[2].text, "so far");
  assert.match(view.status.text, /m-large/);
  push.resolve({ text: "so far and done", kind: "answer" });
  await chat.attaching;
  assert.equal(chat.busy, false);
  assert.deepEqual(chat.messages.map((m) => [m.role, m.text, m.status]), [
    ["user", "earlier", "done"],
    ["user", "long question", "done"],
    ["assistant", "so far and done", "done"],
  ]);
  assert.equal(view.status.text, "Ready · m-large");
});

test("an answer running on another instance (no pending question) is shown as stored once it ends", async () => {
  let calls = 0;
  let done;
  const api = serverApi({
    history: async () => {
      calls += 1;
      return calls === 1
        ? { conversation: "c", messages: [msg(1, "user", "q0"), msg(2, "assistant", "a0")], more: false, running: true }
        : { conversation: "c", messages: [msg(1, "user", "q0"), msg(2, "assistant", "a0"), msg(3, "user", "q"), msg(4, "assistant", "a")], more: false, running: false };
    },
    attach: () => new Promise((resolve) => (done = resolve)),
  });
  const { chat } = setup(api);
  await chat.start();
  assert.equal(chat.busy, true);
  done({ text: "a", kind: "answer" });
  await chat.attaching;
  assert.deepEqual(chat.messages.map((m) => [m.role, m.text, m.seq]), [
    ["user", "q0", 1],
    ["assistant", "a0", 2],
    ["user", "q", 3],
    ["assistant", "a", 4],
  ]);
  assert.equal(calls, 2);
  assert.equal(chat.busy, false);
});

test("when the answer ended before attaching (204) the stored one is shown", async () => {
  let calls = 0;
  const api = serverApi({
    history: async () => {
      calls += 1;
      return calls === 1
        ? { conversation: "c", messages: [msg(1, "user", "q")], more: false, running: true }
        : { conversation: "c", messages: [msg(1, "user", "q"), msg(2, "assistant", "a")], more: false, running: false };
    },
    attach: async () => null,
  });
  const { chat } = setup(api);
  await chat.start();
  await chat.attaching;
  assert.deepEqual(chat.messages.map((m) => m.text), ["q", "a"]);
  assert.equal(chat.busy, false);
});

test("stop cancels on the daemon, keeps the partial answer, and the next message waits for the stop", async () => {
  let stopped;
  const order = [];
  const api = serverApi({
    streamChat: (text, { signal, onDelta }) => {
      order.push(`stream ${text}`);
      if (text !== "long") return Promise.resolve({ text: "quick answer", kind: "answer" });
      onDelta("part", "part");
      return new Promise((_r, reject) =>
        signal.addEventListener("abort", () => reject(new ApiError("stopped", { kind: "aborted", partial: "part" }))),
      );
    },
    stopChat: ({ chat }) => {
      order.push(`stop ${chat}`);
      return new Promise((r) => (stopped = r));
    },
  });
  const { chat } = setup(api);
  await chat.start();
  const first = chat.send("long");
  const stopping = chat.stop();
  assert.equal(chat.busy, true, "busy until the daemon confirms");
  assert.equal(await chat.send("next"), false, "not sent while stopping");
  stopped(true);
  assert.equal(await stopping, true);
  await first;
  assert.equal(chat.busy, false);
  const reply = chat.messages.filter((m) => m.role === "assistant").at(-1);
  assert.deepEqual([reply.text, reply.status], ["part", "stopped"]);
  assert.equal(await chat.send("next"), true);
  assert.deepEqual(order, ["stream long", "stop work", "stream next"]);
  assert.equal(chat.messages.at(-1).text, "quick answer");
});

test("stop on a daemon without /api/chat/stop still stops here", async () => {
  const api = serverApi({
    streamChat: (_t, { signal }) =>
      new Promise((_r, reject) => signal.addEventListener("abort", () => reject(new ApiError("stopped", { kind: "aborted" })))),
    stopChat: async () => {
      throw notFound();
    },
  });
  const { chat } = setup(api);
  await chat.start();
  const turn = chat.send("x");
  assert.equal(await chat.stop(), false);
  await turn;
  assert.equal(chat.messages.at(-1).status, "stopped");
});

test("new chat asks the daemon, empties the page, and starts from the welcome", async () => {
  const api = serverApi({ newChat: async ({ chat }) => (api.log.push(["new", chat]), "c3") });
  const { chat, view, session } = setup(api);
  await chat.start();
  assert.equal(await chat.newChat(), true);
  assert.deepEqual(api.log.at(-1), ["new", "work"]);
  assert.deepEqual(view.texts(), []);
  assert.equal(session.getItem("roost.transcript"), null);
  assert.equal(view.more, false);
  api.newChat = async () => {
    throw new ApiError("HTTP 500: disk full", { kind: "http", status: 500 });
  };
  await chat.send("hello");
  assert.equal(await chat.newChat(), false);
  assert.match(view.status.text, /Could not start a new chat: HTTP 500: disk full/);
  assert.equal(chat.messages.length, 2, "nothing was thrown away");
});

test("past conversations open read-only; sending is refused until back", async () => {
  const api = serverApi({
    conversations: async () => [
      { id: "c2", startedAt: 1, updatedAt: 2, turns: 1, title: "q2", current: true },
      { id: "c1", startedAt: 0, updatedAt: 1, turns: 3, title: "old one", current: false },
    ],
  });
  const base = api.history;
  api.history = async (opts) =>
    opts.conversation === "c1"
      ? { conversation: "c1", messages: [msg(1, "user", "old q"), msg(2, "assistant", "old a")], more: false, running: false }
      : base(opts);
  const { chat, view } = setup(api);
  await chat.start();
  const list = await chat.conversations();
  assert.deepEqual(view.conversations, list);
  assert.equal(await chat.openConversation("c1", "old one"), true);
  assert.deepEqual(view.readOnly, { id: "c1", title: "old one" });
  assert.deepEqual(view.texts(), ["old q", "old a"]);
  assert.equal(await chat.send("hi"), false);
  assert.equal(await chat.retry(chat.messages[1].id), false);
  await chat.backToCurrent();
  assert.equal(view.readOnly, null);
  assert.deepEqual(view.texts(), ["q2", "a2"]);
  assert.equal(await chat.send("hi"), true);
  assert.equal(await chat.openConversation("c2"), true, "the current one is just the chat");
  assert.equal(view.readOnly, null);
});

test("tool and retry events reach the reply being written", async () => {
  const api = serverApi({
    streamChat: async (text, { onProgress, onDelta }) => {
      onProgress({ type: "retry", attempt: 1, max: 3, reason: "the model server is busy" });
      onProgress({ type: "tool", id: "t1", name: "me.sum", state: "start", args: "[1,2]", result: "", ms: null });
      onProgress({ type: "tool", id: "t1", name: "me.sum", state: "done", args: "", result: "3", ms: 4 });
      onDelta("It is 3", "It is 3");
      return { text: "It is 3.", kind: "answer" };
    },
  });
  const { chat, view } = setup(api);
  await chat.start();
  await chat.send("sum");
  const reply = chat.messages.at(-1);
  assert.deepEqual(reply.tools.map((t) => [t.name, t.state, t.args, t.result]), [["me.sum", "done", "[1,2]", "3"]]);
  assert.equal(reply.notice, "");
  const drawn = [...view.rendered.values()].at(-1);
  assert.equal(drawn.text, "It is 3.");
});
