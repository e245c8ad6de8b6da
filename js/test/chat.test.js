import { test } from "node:test";
import assert from "node:assert/strict";
import { ApiError } from "../api.js";
import { chatFromSearch, createChat } from "../chat.js";
import { createTokenStore, createTranscriptStore, tokenKey } from "../storage.js";
import { FakeStorage as MemStorage } from "../testlib/fake_dom.js";


/** Records every call the controller makes; keeps the latest state. */
function fakeView() {
  const v = {
    log: [],
    shown: null,
    formMessage: null,
    busy: false,
    busyHistory: [],
    status: null,
    commands: [],
    rendered: new Map(),
    renders: [],
    showChat() {
      v.shown = "chat";
      v.log.push("showChat");
    },
    showTokenForm(message) {
      v.shown = "token";
      v.formMessage = message;
      v.log.push("showTokenForm");
    },
    renderMessage(msg) {
      v.rendered.set(msg.id, { ...msg });
      v.renders.push({ ...msg });
    },
    setBusy(b) {
      v.busy = b;
      v.busyHistory.push(b);
    },
    setStatus(text, tone) {
      v.status = { text, tone };
    },
    setCommands(list) {
      v.commands = list;
    },
    clearMessages() {
      v.rendered.clear();
      v.log.push("clearMessages");
    },
  };
  return v;
}

/** A fake api whose streamChat is scripted per call. */
function fakeApi(script = {}) {
  const a = {
    calls: [],
    healthy: true,
    commandsBody: { commands: [{ name: "help", usage: "/help [command]", summary: "List commands" }, { name: "memory", usage: "/memory", summary: "m" }] },
    commandsError: null,
    async streamChat(text, opts) {
      a.calls.push({ text, chat: opts.chat });
      const step = (script.turns ?? []).shift();
      if (!step) throw new Error("unexpected turn");
      return step(opts);
    },
    async commands() {
      if (a.commandsError) throw a.commandsError;
      return a.commandsBody;
    },
    async health() {
      return a.healthy;
    },
  };
  return a;
}

function setup({ token = "tok", turns = [], storage = new MemStorage(), session = new MemStorage() } = {}) {
  const tokens = createTokenStore(storage);
  if (token) tokens.set(token);
  const view = fakeView();
  const api = fakeApi({ turns });
  const chat = createChat({ api, view, tokens, transcript: createTranscriptStore(session), chatId: "default" });
  return { chat, view, api, tokens, storage, session };
}

test("chatFromSearch", () => {
  assert.equal(chatFromSearch("?chat=work").id, "work");
  assert.equal(chatFromSearch("").id, "default");
  assert.equal(chatFromSearch("?chat=../x").id, null); // refused: not the default chat in its place
  assert.equal(chatFromSearch("?chat=" + "a".repeat(65)).id, null);
});

test("no token: the form is shown and nothing is sent", async () => {
  const { chat, view, api } = setup({ token: null });
  await chat.start();
  assert.equal(view.shown, "token");
  assert.equal(view.formMessage, "");
  assert.equal(await chat.send("hello"), false);
  assert.equal(api.calls.length, 0);
});

test("a token in the link is stored and the chat opens with command hints", async () => {
  const { chat, view, tokens } = setup({ token: null });
  await chat.start({ hashToken: "fromlink" });
  assert.equal(tokens.get(), "fromlink");
  assert.equal(view.shown, "chat");
  assert.deepEqual(view.commands.map((c) => c.name), ["help", "memory"]);
  assert.deepEqual(chat.hints("/he").map((c) => c.name), ["help"]);
  assert.equal(chat.complete("/me"), "/memory ");
  assert.equal(view.status.tone, "ok");
});

test("submitting the token form: bad input keeps the form, a good one opens the chat", async () => {
  const { chat, view, tokens } = setup({ token: null });
  await chat.start();
  assert.equal(await chat.submitToken("two words"), false);
  assert.equal(view.shown, "token");
  assert.match(view.formMessage, /does not look like a token/);
  assert.equal(await chat.submitToken("http://127.0.0.1:8787/#token=abc"), true);
  assert.equal(tokens.get(), "abc");
  assert.equal(view.shown, "chat");
});

test("a turn: user message, streamed reply, final text replaces it, busy around it", async () => {
  const { chat, view, api, session } = setup({
    turns: [
      async ({ onDelta }) => {
        assert.equal(view.busy, true, "busy while the turn runs");
        onDelta("Hel", "Hel");
        onDelta("lo", "Hello");
        return { text: "Hello, world.", kind: "answer" };
      },
    ],
  });
  await chat.start();
  assert.equal(await chat.send("  hi  "), true);
  assert.deepEqual(api.calls, [{ text: "hi", chat: "default" }]);
  const msgs = chat.messages;
  assert.deepEqual(msgs.map((m) => [m.role, m.text, m.status]), [
    ["user", "hi", "done"],
    ["assistant", "Hello, world.", "done"],
  ]);
  const replyRenders = view.renders.filter((r) => r.role === "assistant").map((r) => [r.status, r.text]);
  assert.deepEqual(replyRenders, [
    ["pending", ""],
    ["streaming", "Hel"],
    ["streaming", "Hello"],
    ["done", "Hello, world."],
  ]);
  assert.deepEqual(view.busyHistory, [true, false]);
  assert.equal(view.status.text, "Ready");
  // The conversation is kept for a reload.
  assert.equal(JSON.parse(session.getItem("roost.transcript")).messages.length, 2);
});

test("only one turn at a time; empty input is not sent", async () => {
  let release;
  const { chat, api } = setup({
    turns: [() => new Promise((r) => (release = () => r({ text: "ok", kind: "answer" })))],
  });
  await chat.start();
  assert.equal(await chat.send("   "), false);
  const first = chat.send("one");
  assert.equal(chat.busy, true);
  assert.equal(await chat.send("two"), false);
  release();
  assert.equal(await first, true);
  assert.equal(api.calls.length, 1);
  assert.equal(chat.busy, false);
});

test("an error is shown inline on the reply, keeps the partial text, and can be retried", async () => {
  const { chat, view, api } = setup({
    turns: [
      async ({ onDelta }) => {
        onDelta("part", "part");
        throw new ApiError("backend timed out", { kind: "server", partial: "part" });
      },
      async () => ({ text: "second try", kind: "answer" }),
    ],
  });
  await chat.start();
  await chat.send("question");
  const failed = chat.messages[1];
  assert.equal(failed.status, "failed");
  assert.equal(failed.error, "backend timed out");
  assert.equal(failed.text, "part");
  assert.equal(view.status.tone, "error");
  assert.equal(view.busy, false);
  assert.equal(await chat.retry(failed.id), true);
  assert.deepEqual(api.calls.map((c) => c.text), ["question", "question"]);
  assert.deepEqual(chat.messages.map((m) => [m.role, m.text, m.status]), [
    ["user", "question", "done"],
    ["assistant", "part", "failed"],
    ["user", "question", "done"],
    ["assistant", "second try", "done"],
  ]);
  assert.equal(await chat.retry(chat.messages[3].id), false, "only failed replies are retried");
});

test("a 401 during a turn clears the token and shows the form with a reason", async () => {
  const { chat, view, tokens } = setup({
    turns: [async () => {
      throw new ApiError("the access token was refused", { kind: "unauthorized", status: 401 });
    }],
  });
  await chat.start();
  await chat.send("hello");
  assert.equal(tokens.get(), null);
  assert.equal(view.shown, "token");
  assert.match(view.formMessage, /refused/);
  assert.equal(chat.messages[1].status, "failed");
  assert.equal(view.commands.length, 0);
  // The conversation stays visible: nothing was cleared.
  assert.equal(view.rendered.size, 2);
  assert.equal(await chat.send("again"), false);
});

test("a 401 when loading commands also asks for the token", async () => {
  const { chat, view, api, tokens } = setup();
  api.commandsError = new ApiError("refused", { kind: "unauthorized", status: 401 });
  await chat.start();
  assert.equal(view.shown, "token");
  assert.equal(tokens.get(), null);
});

test("commands failing for another reason leaves the chat usable", async () => {
  const { chat, view, api } = setup({ turns: [async () => ({ text: "fine", kind: "answer" })] });
  api.commandsError = new ApiError("HTTP 500", { kind: "http", status: 500 });
  await chat.start();
  assert.equal(view.shown, "chat");
  assert.deepEqual(chat.hints("/"), []);
  assert.equal(await chat.send("x"), true);
});

test("an unreachable daemon shows in the status line", async () => {
  const { chat, view, api } = setup();
  api.healthy = false;
  await chat.start();
  assert.equal(view.status.tone, "error");
  assert.match(view.status.text, /not answering/);
});

test("stop() aborts the running turn", async () => {
  const { chat } = setup({
    turns: [
      ({ signal }) =>
        new Promise((_resolve, reject) => {
          signal.addEventListener("abort", () => reject(new ApiError("stopped", { kind: "aborted", partial: "so" })));
        }),
    ],
  });
  await chat.start();
  const turn = chat.send("long one");
  chat.stop();
  await turn;
  assert.equal(chat.messages[1].status, "stopped");
  assert.equal(chat.messages[1].error, "");
  assert.equal(chat.messages[1].text, "so");
});

test("a refusal keeps its kind; an error is a failed turn with its reason and Retry, as after a reload", async () => {
  const { chat, view } = setup({
    turns: [async () => ({ text: "no", kind: "refusal" }), async () => ({ text: "bad (ref 1a)", kind: "error" })],
  });
  await chat.start();
  await chat.send("a");
  await chat.send("b");
  const [refusal, failed] = chat.messages.filter((m) => m.role === "assistant");
  assert.equal(refusal.kind, "refusal");
  assert.deepEqual([failed.status, failed.text, failed.error], ["failed", "", "bad (ref 1a)"]);
  assert.equal(view.status.tone, "error");
});

test("a reload shows the stored conversation; an interrupted reply is marked", async () => {
  const session = new MemStorage();
  session.setItem(
    "roost.transcript",
    JSON.stringify({
      owner: { key: tokenKey("tok") }, // this account's
      messages: [
        { id: 4, role: "user", text: "earlier", kind: "", status: "done", error: "" },
        { id: 5, role: "assistant", text: "half", kind: "", status: "streaming", error: "" },
      ],
    }),
  );
  const { chat, view } = setup({ session, turns: [async () => ({ text: "new", kind: "answer" })] });
  await chat.start();
  assert.deepEqual([...view.rendered.keys()], [4, 5]);
  assert.equal(view.rendered.get(5).status, "failed");
  assert.match(view.rendered.get(5).error, /reload/);
  await chat.send("next");
  assert.deepEqual(chat.messages.map((m) => m.id), [4, 5, 6, 7]);
});

test("newChat() on a daemon without /api/chat/new sends /reset and empties the view", async () => {
  const { chat, view, session, api } = setup({ turns: [async () => ({ text: "a", kind: "answer" })] });
  const sent = [];
  api.chat = async (text, opts) => {
    sent.push([text, opts.chat]);
    return { text: "Session cleared.", kind: "command" };
  };
  await chat.start();
  await chat.send("x");
  assert.equal(await chat.newChat(), true);
  assert.deepEqual(sent, [["/reset", "default"]]);
  assert.deepEqual(chat.messages, []);
  assert.equal(view.rendered.size, 0);
  assert.equal(session.getItem("roost.transcript"), null);
  assert.match(view.status.text, /New chat/);
});

test("an overlong message is refused before sending", async () => {
  const { chat, view, api } = setup();
  api.status = async () => ({ configured: true, model: "", setup: null, speech: {}, maxMessageChars: 16000 });
  await chat.start();
  assert.equal(await chat.send("x".repeat(16001)), false);
  assert.equal(api.calls.length, 0);
  assert.match(view.status.text, /too long/);
});
