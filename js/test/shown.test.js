// What the page shows of the daemon's history and how it changes it: failed turns,
// sent files, versions and where their arrows go, the question above an answer that
// still runs, a stopped answer marked once, edit / another answer / switch, the seqs a
// finished turn learns; and the pure helpers behind them (icons, code languages,
// thumbnails, the spoken answer, the placeholder).
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { createChat } from "../chat.js";
import { fromHistory, placeVersions, withoutStopMark } from "../conversation.js";
import { EMOJI, ICON_NAMES, icon, splitIcons } from "../icons.js";
import { fitPlaceholder, PLACEHOLDER } from "../page_view.js";
import { isSpoken } from "../speech.js";
import { createTokenStore, createTranscriptStore } from "../storage.js";
import { fileKind, thumbSize } from "../thumbs.js";
import { codeLanguage } from "../view_parts.js";
import { FakeDocument, FakeStorage } from "../testlib/fake_dom.js";

const msg = (seq, role, text, extra = {}) => ({ seq, role, text, ts: 1, status: "done", ...extra });

function view() {
  const v = { rendered: new Map(), order: [], status: null, setup: undefined };
  Object.assign(v, {
    showChat() {},
    showTokenForm() {},
    renderMessage(m) {
      if (!v.rendered.has(m.id)) v.order.push(m.id);
      v.rendered.set(m.id, { ...m });
    },
    clearMessages() {
      v.rendered.clear();
      v.order = [];
    },
    setBusy() {},
    setStatus(text, tone) {
      v.status = { text, tone };
    },
    setCommands() {},
    setMore() {},
    setReadOnly() {},
    showSetup(setup, model) {
      v.setup = { setup, model };
    },
  });
  return v;
}

/** A daemon whose history is `pages` (the next one each call, the last one repeated). */
function daemon(pages, extra = {}) {
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
      return pages.length > 1 ? pages.shift() : pages[0];
    },
    async streamChat(text) {
      api.log.push(["stream", text]);
      return { text: `answer to ${text}`, kind: "answer" };
    },
    ...extra,
  };
  return api;
}

function setup(api) {
  const tokens = createTokenStore(new FakeStorage());
  tokens.set("tok");
  const v = view();
  const chat = createChat({ api, view: v, tokens, transcript: createTranscriptStore(new FakeStorage()), chatId: "work" });
  return { chat, v };
}

const page = (messages, more = {}) => ({ conversation: "c", messages, more: false, running: false, pending: null, ...more });

test("fromHistory: a failed turn's answer is its error line; sent files, tools and versions come along", () => {
  assert.deepEqual(fromHistory(msg(null, "assistant", "server down (ref 1)", { status: "error" })), {
    seq: null, role: "assistant", text: "", kind: "", status: "failed", error: "server down (ref 1)",
  });
  const files = [{ name: "a.png", kind: "photo", mime: "image/png", size: 3 }];
  const user = fromHistory(msg(1, "user", "look", { files, versions: { index: 0, count: 2, edited: true } }));
  assert.deepEqual([user.sent, user.versions], [files, { index: 0, count: 2, edited: true }]);
  const tools = [{ id: "1", name: "me__x", state: "done", args: "{}", result: "1", ms: null }];
  assert.deepEqual(fromHistory(msg(2, "assistant", "ok", { tools })).tools, tools);
});

test("placeVersions: an edit's arrows on the message, another answer's on the answer", () => {
  const edited = { index: 1, count: 2, edited: true };
  const again = { index: 0, count: 3, edited: false };
  const list = [
    { role: "user", text: "a", versions: edited },
    { role: "assistant", text: "A" },
    { role: "user", text: "b", versions: again },
    { role: "assistant", text: "B" },
  ];
  const placed = placeVersions(list);
  assert.deepEqual(placed.map((m) => m.versions ?? null), [edited, null, null, again]);
  assert.equal(list[2].versions, again); // the input is left as it was
});

test("withoutStopMark: the daemon's mark goes, the answer stays", () => {
  assert.equal(withoutStopMark("half an answer … [stopped]"), "half an answer");
  assert.equal(withoutStopMark("[stopped]"), "");
  assert.equal(withoutStopMark("a whole answer"), "a whole answer");
});

test("a reload while an answer runs shows its question above it; a stop there is marked once", async () => {
  let push;
  const api = daemon([page([msg(1, "user", "hi"), msg(2, "assistant", "hello")], { running: true, pending: { text: "a long question", ts: 3 } })], {
    attach: ({ onDelta }) =>
      new Promise((resolve) => {
        onDelta("and on", "and on");
        push = () => resolve({ text: "and on … [stopped]", kind: "stopped" });
      }),
  });
  const { chat, v } = setup(api);
  await chat.start();
  await new Promise((r) => setImmediate(r));
  assert.deepEqual(chat.messages.map((m) => [m.role, m.text]), [
    ["user", "hi"],
    ["assistant", "hello"],
    ["user", "a long question"],
    ["assistant", "and on"],
  ]);
  push();
  await chat.attaching;
  const last = chat.messages.at(-1);
  assert.deepEqual([last.status, last.text], ["stopped", "and on"]);
  assert.equal(v.status.text, "Stopped");
});

test("a finished turn learns its seq, so Edit and another answer work at once", async () => {
  const api = daemon([page([]), page([msg(7, "user", "q"), msg(8, "assistant", "answer to q", { versions: undefined })])]);
  const { chat } = setup(api);
  await chat.start();
  await chat.send("q");
  assert.deepEqual(chat.messages.map((m) => m.seq), [7, 8]);
  assert.deepEqual(api.log.at(-1), ["history", { chat: "work", limit: 4 }]);
});

test("edit: later messages go, the new answer streams, the daemon's versions are shown", async () => {
  const before = page([msg(1, "user", "cat"), msg(2, "assistant", "A"), msg(3, "user", "more"), msg(4, "assistant", "B")]);
  const after = page([msg(5, "user", "dog", { versions: { index: 1, count: 2, edited: true } }), msg(6, "assistant", "D")]);
  const seen = [];
  const api = daemon([before, after], {
    async editMessage({ chat, seq, text, onDelta }) {
      seen.push({ chat, seq, text });
      onDelta("D", "D");
      return { text: "D", kind: "answer" };
    },
  });
  const { chat } = setup(api);
  await chat.start();
  const first = chat.messages[0];
  assert.equal(await chat.edit(first.id, "  cat  "), false); // unchanged: nothing to do
  assert.equal(await chat.edit(first.id, "dog"), true);
  assert.deepEqual(seen, [{ chat: "work", seq: 1, text: "dog" }]);
  assert.deepEqual(chat.messages.map((m) => [m.seq, m.text]), [[5, "dog"], [6, "D"]]);
  assert.deepEqual(chat.messages[0].versions, { index: 1, count: 2, edited: true });
});

test("another answer and switching versions go to the daemon, then show its history", async () => {
  const asked = [];
  const api = daemon(
    [
      page([msg(1, "user", "joke"), msg(2, "assistant", "one")]),
      page([msg(1, "user", "joke", { versions: { index: 1, count: 2, edited: false } }), msg(3, "assistant", "two")]),
      page([msg(4, "user", "joke", { versions: { index: 0, count: 2, edited: false } }), msg(5, "assistant", "one")]),
    ],
    {
      async regenerate({ seq }) {
        asked.push(["again", seq]);
        return { text: "two", kind: "answer" };
      },
      async switchVersion({ seq, index }) {
        asked.push(["switch", seq, index]);
        return true;
      },
    },
  );
  const { chat } = setup(api);
  await chat.start();
  assert.equal(await chat.regenerate(chat.messages[0].id), false); // a question is no answer
  assert.equal(await chat.regenerate(chat.messages[1].id), true);
  const answer = chat.messages[1];
  assert.deepEqual([answer.text, answer.versions], ["two", { index: 1, count: 2, edited: false }]);
  assert.equal(await chat.switchVersion(answer.id, 5), false); // no such version
  assert.equal(await chat.switchVersion(answer.id, 0), true);
  assert.deepEqual(asked, [["again", 2], ["switch", 3, 0]]);
  assert.deepEqual(chat.messages.map((m) => m.text), ["joke", "one"]);
});

test("no model configured: the setup banner is shown before anything is asked", async () => {
  const setupBody = { toml: "[llm]\nbase_url = \"x\"", env: "ROOST_LLM__BASE_URL" };
  const { chat, v } = setup(daemon([page([])], { status: async () => ({ configured: false, model: "offline", setup: setupBody }) }));
  await chat.start();
  assert.deepEqual(v.setup, { setup: setupBody, model: "offline" });
  const ok = setup(daemon([page([])], { status: async () => ({ configured: true, model: "m", setup: null }) }));
  await ok.chat.start();
  assert.equal(ok.v.setup.setup, null);
});

test("splitIcons finds the emoji roost's messages use; each has a drawn icon", () => {
  assert.deepEqual(splitIcons("⏰ at 9 · 📎 notes.md ⚠️ careful"), [
    { icon: "clock", label: "reminder" },
    " at 9 · ",
    { icon: "paperclip", label: "file" },
    " notes.md ",
    { icon: "warning", label: "warning" },
    " careful",
  ]);
  assert.deepEqual(splitIcons("plain"), ["plain"]);
  for (const [name] of Object.values(EMOJI)) assert.ok(ICON_NAMES.includes(name), name);
  const doc = new FakeDocument("");
  const hidden = icon(doc, "mic");
  assert.equal(hidden.tagName, "SVG");
  assert.equal(hidden.namespaceURI, "http://www.w3.org/2000/svg");
  assert.equal(hidden.getAttribute("aria-hidden"), "true");
  const said = icon(doc, "clock", { label: "reminder" });
  assert.deepEqual([said.getAttribute("role"), said.getAttribute("aria-label")], ["img", "reminder"]);
  assert.throws(() => icon(doc, "nope"));
});

test("the page itself carries no emoji, and every button has a name", () => {
  const html = readFileSync(new URL("../index.html", import.meta.url), "utf8");
  assert.doesNotMatch(html, /[\u{1F300}-\u{1FAFF}\u{2600}-\u{27BF}\u{25D0}]/u);
  for (const m of html.matchAll(/<button\b([^>]*)>([^<]*)<\/button>/g)) {
    assert.ok(/aria-label="[^"]+"/.test(m[1]) || m[2].trim(), m[0]);
  }
  assert.match(html, /media-src blob:/); // spoken answers play from blob: URLs
});

test("codeLanguage names a block's language from the renderer's class", () => {
  assert.equal(codeLanguage({ className: "hljs language-python" }), "Python");
  assert.equal(codeLanguage({ className: "lang-rs" }), "Rust");
  assert.equal(codeLanguage({ className: "language-brainfuck" }), "brainfuck");
  assert.equal(codeLanguage({ className: "" }), "text");
  assert.equal(codeLanguage(null), "text");
});

test("thumbnails fit their box and never grow; a file's kind from the daemon or its type", () => {
  assert.deepEqual(thumbSize(640, 480, 96), { width: 96, height: 72 });
  assert.deepEqual(thumbSize(30, 300, 96), { width: 10, height: 96 });
  assert.deepEqual(thumbSize(10, 5, 96), { width: 10, height: 5 });
  assert.equal(fileKind({ kind: "photo" }), "photo");
  assert.equal(fileKind({ file: { type: "image/png" } }), "photo");
  assert.equal(fileKind({ voice: true, file: { type: "audio/webm" } }), "voice");
  assert.equal(fileKind({ mime: "image/svg+xml" }), "document"); // not an image roost reads
  assert.equal(fileKind({ mime: "application/pdf" }), "document");
});

test("a reply's audio file is played; other files are download links", () => {
  assert.equal(isSpoken({ name: "spoken answer.ogg", mime: "audio/ogg", url: "/files/a.b" }), true);
  assert.equal(isSpoken({ name: "x.zip", mime: "application/zip", url: "/files/a.b" }), false);
  assert.equal(isSpoken({ name: "x.ogg", mime: "audio/ogg", url: "https://elsewhere/x" }), false);
});

test("the placeholder is short where the box is narrow", () => {
  const input = { placeholder: "" };
  fitPlaceholder({ matchMedia: () => ({ matches: true }) }, input);
  assert.equal(input.placeholder, PLACEHOLDER.narrow);
  fitPlaceholder({ matchMedia: () => ({ matches: false }) }, input);
  assert.equal(input.placeholder, PLACEHOLDER.wide);
});
