// The chat name of ?chat= (a name the daemon refuses opens no chat, never the default
// one in its place) and the message limit the daemon states in GET /api/status
// (counted in code points, as the daemon counts).
import { test } from "node:test";
import assert from "node:assert/strict";
import { normalizeStatus } from "../api_history.js";
import { startPage } from "../app.js";
import { CHAT_RULE, charCount, chatFromSearch, createChat, suggestChatName } from "../chat.js";
import { createTokenStore, createTranscriptStore } from "../storage.js";
import { FakeStorage, fakeWindow } from "../testlib/fake_dom.js";

test("chatFromSearch: a valid name, none, or a refused one (never the default in its place)", () => {
  assert.deepEqual(chatFromSearch("?chat=work"), { id: "work", asked: "work" });
  assert.deepEqual(chatFromSearch(""), { id: "default", asked: null });
  assert.deepEqual(chatFromSearch("?chat="), { id: "default", asked: null });
  assert.deepEqual(chatFromSearch("?chat=Eink%C3%A4ufe"), { id: null, asked: "Einkäufe" });
  assert.deepEqual(chatFromSearch("?chat=my%20list"), { id: null, asked: "my list" });
  assert.deepEqual(chatFromSearch("?chat=work.notes"), { id: null, asked: "work.notes" });
  assert.deepEqual(chatFromSearch("?chat=../x"), { id: null, asked: "../x" });
  assert.equal(chatFromSearch("?chat=" + "a".repeat(64)).id, "a".repeat(64));
  assert.equal(chatFromSearch("?chat=" + "a".repeat(65)).id, null);
});

test("suggestChatName: a valid name close to the refused one", () => {
  assert.equal(suggestChatName("Einkäufe"), "Einkaufe");
  assert.equal(suggestChatName("my list"), "my-list");
  assert.equal(suggestChatName("work.notes"), "work-notes");
  assert.equal(suggestChatName("Straße"), "Strasse");
  assert.equal(suggestChatName("a".repeat(70)), "a".repeat(64));
  assert.equal(suggestChatName("日本"), null);
  assert.equal(suggestChatName("..."), null);
  for (const s of ["Einkäufe", "my list", "x".repeat(63) + " y"]) assert.match(suggestChatName(s), /^[A-Za-z0-9_-]{1,64}$/);
});

test("charCount counts code points, as the daemon does (an emoji is one)", () => {
  assert.equal(charCount("abc"), 3);
  assert.equal(charCount("😀".repeat(9000)), 9000);
  assert.equal("😀".repeat(9000).length, 18000);
});

test("normalizeStatus reads the daemon's message limit", () => {
  assert.equal(normalizeStatus({ limits: { max_message_chars: 50000 } }).maxMessageChars, 50000);
  for (const bad of [{}, { limits: {} }, { limits: { max_message_chars: 0 } }, { limits: { max_message_chars: "9" } }, null]) {
    assert.equal(normalizeStatus(bad).maxMessageChars, null);
  }
});

function statusLine() {
  const v = { status: null, rendered: new Map() };
  return Object.assign(v, {
    showChat() {},
    showTokenForm() {},
    renderMessage(msg) {
      v.rendered.set(msg.id, { ...msg });
    },
    setBusy() {},
    setStatus(text, tone) {
      v.status = { text, tone };
    },
    setCommands() {},
    clearMessages() {},
  });
}

/** A chat over a fake api whose /api/status says `limits` (one value per ask, the last repeated). */
async function chatWithLimit(...limits) {
  const api = {
    calls: [],
    asked: 0,
    async streamChat(text, opts) {
      api.calls.push({ text, chat: opts.chat });
      return { text: "ok", kind: "text" };
    },
    async commands() {
      return { commands: [] };
    },
    async health() {
      return true;
    },
    async status() {
      const limit = limits[Math.min(api.asked, limits.length - 1)];
      api.asked += 1;
      return normalizeStatus({ model: { configured: true }, limits: { max_message_chars: limit } });
    },
  };
  const tokens = createTokenStore(new FakeStorage());
  tokens.set("tok");
  const view = statusLine();
  const chat = createChat({ api, view, tokens, transcript: createTranscriptStore(new FakeStorage()), chatId: "default" });
  await chat.start();
  return { chat, api, view };
}

test("a message over 16,000 characters goes when the daemon's limit is larger", async () => {
  const { chat, api } = await chatWithLimit(50000);
  const text = "lorem ipsum ".repeat(1700).trim(); // 20,399 characters
  assert.equal(await chat.send(text), true);
  assert.deepEqual(api.calls.map((c) => c.text.length), [20399]);
});

test("emoji count once: 9,000 of them are within a 16,000 limit", async () => {
  const { chat, api } = await chatWithLimit(16000);
  assert.equal(await chat.send("😀".repeat(9000)), true);
  assert.equal(api.calls.length, 1);
});

test("over the daemon's limit: refused before sending, the limit named", async () => {
  const { chat, api, view } = await chatWithLimit(100);
  assert.equal(await chat.send("x".repeat(101)), false);
  assert.equal(api.calls.length, 0);
  assert.equal(view.status.tone, "error");
  assert.match(view.status.text, /too long: 101 characters, this roost takes at most 100/);
});

test("a limit raised since sign-in (a reload) is asked again before refusing", async () => {
  const { chat, api } = await chatWithLimit(100, 500);
  assert.equal(await chat.send("x".repeat(300)), true);
  assert.equal(api.calls.length, 1);
});

test("a daemon that states no limit decides alone: the page sends", async () => {
  const { chat, api } = await chatWithLimit(undefined);
  assert.equal(await chat.send("x".repeat(40000)), true);
  assert.equal(api.calls.length, 1);
});

test("?chat= with a refused name: no chat opened, nothing asked of the daemon, the rule shown", async () => {
  const calls = [];
  const storage = new FakeStorage();
  const win = fakeWindow({
    url: "http://127.0.0.1:8787/?chat=Eink%C3%A4ufe#token=tok",
    fetch: async (url) => {
      calls.push(url);
      return new Response("", { status: 404 });
    },
    localStorage: storage,
  });
  const went = [];
  win.location.assign = (to) => went.push(to);
  const { chat, ready } = startPage(win, { importer: async () => ({}) });
  await ready;
  const $ = (id) => win.document.getElementById(id);
  assert.equal(chat, null);
  assert.deepEqual(calls, []); // no history, no message: nothing of the default chat
  assert.equal($("chat-refused").hidden, false);
  assert.equal($("composer").hidden, true);
  assert.equal($("welcome").hidden, true);
  assert.match($("chat-refused-text").textContent, /“Einkäufe”.*No chat was opened/);
  assert.ok($("chat-refused-rule").textContent.startsWith(CHAT_RULE));
  assert.match(CHAT_RULE, /1 to 64 characters/);
  assert.equal($("status").dataset.tone, "error");
  assert.equal($("chat-suggest").hidden, false);
  assert.equal($("chat-suggest").textContent, "Open the chat “Einkaufe”");
  $("chat-suggest").dispatch("click");
  $("chat-default").dispatch("click");
  assert.deepEqual(went, ["/?chat=Einkaufe", "/"]);
  assert.equal(win.location.hash, ""); // the token left the address bar, as on any open
  assert.equal(storage.getItem("roost.token"), "tok"); // stored, as a first open does: a fixed name keeps it
});

test("?chat= with a refused name and a link to another account: its token goes along with the buttons", async () => {
  const storage = new FakeStorage();
  createTokenStore(storage).set("mine-0123456789");
  const win = fakeWindow({ url: "http://127.0.0.1:8787/?chat=a.b#token=theirs-0123456789", fetch: async () => new Response("", { status: 404 }), localStorage: storage });
  const went = [];
  win.location.assign = (to) => went.push(to);
  await startPage(win, { importer: async () => ({}) }).ready;
  win.document.getElementById("chat-suggest").dispatch("click");
  assert.deepEqual(went, ["/?chat=a-b#token=theirs-0123456789"]); // the next page asks before switching
  assert.equal(createTokenStore(storage).get(), "mine-0123456789");
  assert.equal(win.location.hash, "");
});
