// app.js (the DOM glue) driven through a small fake window built from the
// real index.html; the daemon is a fake fetch speaking the real SSE format.
import { test } from "node:test";
import assert from "node:assert/strict";
import { startPage } from "../app.js";
import { FakeStorage, fakeWindow } from "../testlib/fake_dom.js";

const enc = new TextEncoder();
const COMMANDS = { commands: [{ name: "help", usage: "/help [command]", summary: "List commands" }] };

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

/** A fake daemon; `turn(body)` answers /api/chat/stream. */
function daemon(turn, { token = "tok" } = {}) {
  const calls = [];
  const fetch = async (url, init) => {
    calls.push({ url, init });
    if (url === "/healthz") return Response.json({ ok: true });
    if (init.headers.Authorization !== `Bearer ${token}`) return new Response("", { status: 401 });
    if (url === "/api/commands") return Response.json(COMMANDS);
    if (url === "/api/chat/stream") return turn(JSON.parse(init.body), calls.length, init);
    return new Response("", { status: 404 });
  };
  return { fetch, calls };
}

async function until(pred) {
  while (!pred()) await new Promise((r) => setImmediate(r));
}

function els(win) {
  const $ = (id) => win.document.getElementById(id);
  return {
    input: $("input"),
    send: $("send"),
    stop: $("stop"),
    log: $("log"),
    hints: $("hints"),
    status: $("status"),
    composer: $("composer"),
    tokenView: $("token-view"),
    tokenForm: $("token-form"),
    tokenInput: $("token-input"),
    tokenMessage: $("token-message"),
    sendForm: $("send-form"),
    messages: $("messages"),
    newChat: $("new-chat"),
    welcome: $("welcome"),
    earlier: $("earlier"),
  };
}

/** A message's part by its class (body, error, files, tools, notice, …). */
const part = (node, cls) => node.children.find((c) => c.className.split(" ").includes(cls));

function type(e, text) {
  e.input.value = text;
  e.input.dispatch("input");
}

test("the token in the link is stored and removed from the address bar", async () => {
  const d = daemon(() => sse([]));
  const win = fakeWindow({ url: "http://127.0.0.1:8787/?chat=work#token=tok", fetch: d.fetch });
  const { ready } = startPage(win);
  await ready;
  assert.equal(win.location.hash, "");
  assert.deepEqual(win.history.calls, ["/?chat=work"]);
  assert.equal(win.localStorage.getItem("roost.token"), "tok");
  const e = els(win);
  assert.equal(e.composer.hidden, false);
  assert.equal(e.tokenView.hidden, true);
  assert.match(e.status.textContent, /work/);
});

test("a turn: Enter sends, Send is disabled meanwhile, the reply is rendered", async () => {
  let release;
  const d = daemon(
    (body) =>
      new Promise((r) => {
        release = () => r(sse([["delta", { text: "Hi " }], ["final", { text: `**Hi** <img src=x onerror=alert(1)> ${body.text}`, kind: "answer" }]]));
      }),
  );
  const win = fakeWindow({ url: "http://127.0.0.1:8787/#token=tok", fetch: d.fetch });
  const { ready, chat } = startPage(win);
  await ready;
  const e = els(win);

  type(e, "line one");
  const shifted = e.input.dispatch("keydown", { key: "Enter", shiftKey: true });
  assert.equal(shifted.defaultPrevented, false, "Shift+Enter keeps the newline");
  assert.equal(e.input.value, "line one");

  const enter = e.input.dispatch("keydown", { key: "Enter" });
  assert.equal(enter.defaultPrevented, true);
  await until(() => release);
  assert.equal(e.send.disabled, true);
  assert.equal(e.stop.hidden, false);
  assert.equal(e.input.value, "", "the input is emptied when sent");

  // Enter during the turn does not send a second message.
  type(e, "second");
  e.input.dispatch("keydown", { key: "Enter" });
  release();
  await until(() => !chat.busy);
  assert.equal(d.calls.filter((c) => c.url === "/api/chat/stream").length, 1);
  assert.equal(e.input.value, "second", "text typed during the turn is kept");
  assert.equal(e.send.disabled, false);
  assert.equal(e.stop.hidden, true);

  const [user, reply] = e.messages.children;
  assert.match(user.className, /\buser\b/);
  assert.equal(part(user, "body").textContent, "line one");
  assert.match(reply.className, /\bassistant\b.*status-done.*kind-answer/);
  const html = part(reply, "body").innerHTML;
  assert.match(html, /^<strong>Hi<\/strong> &lt;img src=x onerror=alert\(1\)&gt; line one$/);
  assert.equal(part(reply, "error").hidden, true, "no error shown");
  assert.equal(e.status.textContent, "Ready");
});

test("streamed pieces are drawn on the next animation frame", async () => {
  let push;
  const d = daemon(() => {
    const stream = new ReadableStream({
      start(c) {
        push = (ev, data) => c.enqueue(enc.encode(`event: ${ev}\ndata: ${JSON.stringify(data)}\n\n`));
      },
    });
    return new Response(stream);
  });
  const win = fakeWindow({ url: "http://127.0.0.1:8787/#token=tok", fetch: d.fetch });
  const { ready, chat } = startPage(win);
  await ready;
  const e = els(win);
  type(e, "q");
  e.sendForm.dispatch("submit");
  await until(() => push);
  push("delta", { text: "par" });
  await until(() => chat.messages[1]?.text === "par");
  const reply = e.messages.children[1];
  assert.equal(part(reply, "body").innerHTML, "", "not drawn before the frame");
  win.flushFrames();
  assert.equal(part(reply, "body").innerHTML, "par");
  assert.match(reply.className, /status-streaming/);
  push("final", { text: "done", kind: "answer" });
  await until(() => !chat.busy);
  assert.equal(part(reply, "body").innerHTML, "done");
  win.flushFrames(); // a stale frame must not draw the streaming text again
  assert.equal(part(reply, "body").innerHTML, "done");
});

test("command hints appear for / and Tab completes", async () => {
  const d = daemon(() => sse([]));
  const win = fakeWindow({ url: "http://127.0.0.1:8787/#token=tok", fetch: d.fetch });
  const { ready } = startPage(win);
  await ready;
  const e = els(win);
  type(e, "/he");
  assert.equal(e.hints.hidden, false);
  assert.equal(e.hints.children.length, 1);
  assert.equal(e.hints.children[0].textContent, "/help [command]List commands");
  const tab = e.input.dispatch("keydown", { key: "Tab" });
  assert.equal(tab.defaultPrevented, true);
  assert.equal(e.input.value, "/help ");
  type(e, "hello");
  assert.equal(e.hints.hidden, true);
  const plainTab = e.input.dispatch("keydown", { key: "Tab" });
  assert.equal(plainTab.defaultPrevented, false, "Tab moves focus when there is nothing to complete");
});

test("a failed turn shows the error inline with a Retry button", async () => {
  let n = 0;
  const d = daemon(() => (++n === 1 ? sse([["error", { message: "model offline" }]]) : sse([["final", { text: "ok now", kind: "answer" }]])));
  const win = fakeWindow({ url: "http://127.0.0.1:8787/#token=tok", fetch: d.fetch });
  const { ready, chat } = startPage(win);
  await ready;
  const e = els(win);
  type(e, "hello");
  e.input.dispatch("keydown", { key: "Enter" });
  await until(() => chat.messages[1]?.status === "failed");
  await until(() => !chat.busy);
  const reply = e.messages.children[1];
  const error = part(reply, "error");
  assert.equal(error.hidden, false);
  assert.equal(error.children[0].textContent, "model offline");
  assert.equal(e.status.dataset.tone, "error");
  error.children[1].dispatch("click");
  await until(() => chat.messages.length === 4 && !chat.busy);
  assert.equal(part(e.messages.children[3], "body").innerHTML, "ok now");
  assert.equal(e.messages.children.length, 4, "the conversation stays visible");
});

test("a refused token clears it and shows the form with a message", async () => {
  const storage = new FakeStorage();
  storage.setItem("roost.token", "old");
  const d = daemon(() => sse([]), { token: "new" });
  const win = fakeWindow({ fetch: d.fetch, localStorage: storage });
  const { ready } = startPage(win);
  await ready;
  const e = els(win);
  assert.equal(e.tokenView.hidden, false);
  assert.equal(e.composer.hidden, true);
  assert.match(e.tokenMessage.textContent, /refused/);
  assert.equal(storage.getItem("roost.token"), null);
  // Pasting the right token opens the chat.
  e.tokenInput.value = "new";
  e.tokenForm.dispatch("submit");
  await until(() => e.composer.hidden === false);
  assert.equal(storage.getItem("roost.token"), "new");
  assert.equal(e.tokenView.hidden, true);
});

test("without any token the form is shown first", async () => {
  const d = daemon(() => sse([]));
  const win = fakeWindow({ fetch: d.fetch });
  const { ready } = startPage(win);
  await ready;
  const e = els(win);
  assert.equal(e.tokenView.hidden, false);
  assert.equal(e.composer.hidden, true);
  assert.match(e.tokenMessage.textContent, /Paste the access token/);
  assert.match(e.tokenMessage.textContent, /\$ROOST_HOME\/web-token/); // where the operator finds it
  assert.equal(d.calls.filter((c) => c.url.startsWith("/api/")).length, 0);
});

test("a reply's files are shown as download links under it", async () => {
  const file = { name: "roost-export-local.zip", mime: "application/zip", size: 4096, url: "/files/tok.en" };
  const d = daemon(() => sse([["final", { text: "Here is everything", kind: "command", files: [file] }]]));
  const win = fakeWindow({ url: "http://127.0.0.1:8787/#token=tok", fetch: d.fetch });
  const { ready, chat } = startPage(win);
  await ready;
  const e = els(win);
  type(e, "/export");
  e.input.dispatch("keydown", { key: "Enter" });
  await until(() => !chat.busy && chat.messages[1]?.status === "done");
  const reply = e.messages.children[1];
  const [link] = part(reply, "files").children;
  assert.equal(link.href, "/files/tok.en");
  assert.equal(link.download, "roost-export-local.zip");
  assert.match(link.textContent, /roost-export-local\.zip \(4 KB, download once\)/);
});

test("tool calls are cards with arguments and result; a retry is a line under the reply", async () => {
  let push;
  const d = daemon(() => {
    const stream = new ReadableStream({
      start(c) {
        push = (ev, data) => c.enqueue(enc.encode(`event: ${ev}\ndata: ${JSON.stringify(data)}\n\n`));
      },
    });
    return new Response(stream);
  });
  const win = fakeWindow({ url: "http://127.0.0.1:8787/#token=tok", fetch: d.fetch });
  const { ready, chat } = startPage(win);
  await ready;
  const e = els(win);
  type(e, "q");
  e.sendForm.dispatch("submit");
  await until(() => push);
  push("info", { model: "qwen3" });
  push("retry", { attempt: 2, max: 4, reason: "the model server is busy" });
  await until(() => chat.messages[1]?.notice);
  const reply = e.messages.children[1];
  const tools = part(reply, "tools");
  const notice = part(reply, "notice");
  assert.equal(notice.textContent, "the model server is busy, retrying 2/4");
  assert.equal(notice.hidden, false);
  assert.equal(e.status.textContent, "The model server is busy, retrying 2/4… · qwen3");
  push("tool", { id: "t", name: "me.sum", state: "start", args: "[1,2]" });
  await until(() => chat.messages[1].tools?.length);
  const card = tools.children[0];
  assert.equal(card.tagName, "DETAILS");
  assert.equal(card.children[0].textContent, "me.sum · running…");
  assert.equal(card.children[2].textContent, "[1,2]");
  assert.equal(card.children[4].hidden, true, "no result yet");
  card.open = true;
  push("tool", { id: "t", name: "me.sum", state: "error", result: "ZeroDivisionError: division by zero", ms: 7 });
  await until(() => chat.messages[1].tools[0].state === "error");
  assert.equal(tools.children[0], card, "the same card: an opened card stays open");
  assert.equal(card.open, true);
  assert.match(card.className, /state-error/);
  assert.equal(card.children[0].textContent, "me.sum · failed in 7 ms");
  assert.equal(card.children[3].textContent, "Error");
  assert.equal(card.children[4].textContent, "ZeroDivisionError: division by zero");
  push("final", { text: "sorry", kind: "answer" });
  await until(() => !chat.busy);
  assert.equal(notice.hidden, true);
  assert.equal(e.status.textContent, "Ready · qwen3");
});

test("the welcome shows on an empty chat, lists the commands and goes with the first message", async () => {
  const d = daemon(() => sse([["final", { text: "hi", kind: "answer" }]]));
  const win = fakeWindow({ url: "http://127.0.0.1:8787/#token=tok", fetch: d.fetch });
  const { ready, chat } = startPage(win);
  await ready;
  const e = els(win);
  assert.equal(e.welcome.hidden, false);
  const commands = win.document.getElementById("welcome-commands");
  assert.equal(commands.children[0].textContent, "/help [command]List commands");
  commands.children[0].dispatch("mousedown");
  assert.equal(e.input.value, "/help ");
  const example = { textContent: "  Make a table  " };
  win.document.getElementById("examples").dispatch("click", { target: { closest: () => example } });
  await until(() => !chat.busy && chat.messages.length === 2);
  assert.equal(chat.messages[0].text, "Make a table");
  assert.equal(e.welcome.hidden, true);
});

test("a stopped answer is marked and keeps Retry", async () => {
  const d = daemon((_b, _n, init) => {
    const stream = new ReadableStream({
      start(c) {
        c.enqueue(enc.encode(`event: delta\ndata: {"text":"half"}\n\n`));
        // as fetch does: aborting the request errors its body
        init.signal.addEventListener("abort", () => c.error(new DOMException("aborted", "AbortError")));
      },
    });
    return new Response(stream);
  });
  const win = fakeWindow({ url: "http://127.0.0.1:8787/#token=tok", fetch: d.fetch });
  const { ready, chat } = startPage(win);
  await ready;
  const e = els(win);
  type(e, "q");
  e.sendForm.dispatch("submit");
  await until(() => chat.messages[1]?.text === "half");
  e.stop.dispatch("click");
  await until(() => !chat.busy);
  const reply = e.messages.children[1];
  assert.match(reply.className, /status-stopped/);
  const error = part(reply, "error");
  assert.equal(error.hidden, false);
  assert.equal(error.children[0].textContent, "Stopped — the answer was cut here.");
  assert.equal(error.children[1].hidden, false);
  assert.ok(d.calls.some((c) => c.url === "/api/chat/stop" && JSON.parse(c.init.body).chat === "default"));
});

test("a #token= link pasted into the open page signs in and leaves the address bar", async () => {
  const d = daemon(() => sse([]), { token: "fresh" });
  const win = fakeWindow({ url: "http://127.0.0.1:8787/", fetch: d.fetch });
  const { ready } = startPage(win);
  await ready;
  const e = els(win);
  assert.equal(e.tokenView.hidden, false);
  win.location.hash = "#token=fresh";
  win.dispatch("hashchange");
  await until(() => !e.composer.hidden);
  assert.equal(win.location.hash, "");
  assert.equal(win.localStorage.getItem("roost.token"), "fresh");
});

test("the theme button cycles and remembers; the stored choice applies on load", async () => {
  const storage = new FakeStorage();
  storage.setItem("roost.theme", "dark");
  const win = fakeWindow({ url: "http://127.0.0.1:8787/#token=tok", fetch: daemon(() => sse([])).fetch, localStorage: storage });
  const { ready } = startPage(win);
  await ready;
  const root = win.document.documentElement;
  const button = win.document.getElementById("theme");
  assert.equal(root.dataset.theme, "dark");
  button.dispatch("click");
  assert.equal(root.dataset.theme, undefined, "dark -> system");
  assert.equal(storage.getItem("roost.theme"), null);
  assert.equal(button.title, "Theme: system");
  button.dispatch("click");
  assert.equal(root.dataset.theme, "light");
  assert.equal(storage.getItem("roost.theme"), "light");
});
