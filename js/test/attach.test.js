// attach.js: the chip list, sizes, the upload request and its errors, and the
// page wiring (paste, drop, remove, send) through the fake window of app.js.
import { test } from "node:test";
import assert from "node:assert/strict";
import { ApiError } from "../api.js";
import { startPage } from "../app.js";
import { chipName, createAttachments, createUploader, filesFromTransfer, formatSize, uploadRequest } from "../attach.js";
import { fakeWindow } from "../testlib/fake_dom.js";

const ID = "0123456789abcdef0123456789abcdef";
const file = (name, text = "hello", type = "text/plain") => new File([text], name, { type });

test("sizes read as people read them", () => {
  const cases = [[0, "0 B"], [1, "1 B"], [999, "999 B"], [1000, "1.0 KB"], [1536, "1.5 KB"], [12_345, "12 KB"],
    [999_499, "999 KB"], [1_500_000, "1.5 MB"], [20_971_520, "21 MB"], [3e9, "3.0 GB"], [-5, "0 B"], [NaN, "0 B"]];
  for (const [n, want] of cases) assert.equal(formatSize(n), want, `${n}`);
});

test("a chip's name: the file's last path piece, or a made-up one for a pasted image", () => {
  assert.equal(chipName(file("C:\\Users\\me\\scan.pdf")), "scan.pdf");
  assert.equal(chipName(new File(["x"], "", { type: "image/png" })), "pasted image.png");
  assert.equal(chipName(new File(["x"], "", { type: "image/jpeg" })), "pasted image.jpg");
  assert.equal(chipName(new File(["x"], "", { type: "text/html" })), "file");
  assert.equal(chipName(file("x".repeat(300))).length, 120);
});

test("the chip list adds in order, refuses empty files and more than the maximum, removes by key", () => {
  const seen = [];
  const list = createAttachments({ max: 2, onChange: (items) => seen.push(items.map((i) => i.name)) });
  const a = list.add(file("a.txt"));
  assert.equal(a.ok, true);
  assert.deepEqual(list.add(file("empty.txt", "")), { ok: false, reason: "empty.txt is empty" });
  const b = list.add(new Blob(["voice"], { type: "audio/webm" }), { name: "voice.webm", voice: true });
  assert.equal(b.item.voice, true);
  assert.deepEqual(list.add(file("c.txt")), { ok: false, reason: "at most 2 files per message" });
  assert.deepEqual(list.add("not a file"), { ok: false, reason: "that is not a file" });
  assert.equal(list.remove(a.item.key), true);
  assert.equal(list.remove(a.item.key), false);
  list.clear();
  assert.deepEqual(seen, [["a.txt"], ["a.txt", "voice.webm"], ["voice.webm"], []]);
  assert.equal(list.items.length, 0);
});

test("files come from a DataTransfer's files, else its file items", () => {
  const f = file("a.txt");
  assert.deepEqual(filesFromTransfer({ files: [f], items: [] }), [f]);
  const items = [{ kind: "string", getAsFile: () => null }, { kind: "file", getAsFile: () => f }];
  assert.deepEqual(filesFromTransfer({ files: [], items }), [f]);
  assert.deepEqual(filesFromTransfer(null), []);
});

test("the upload request is one multipart part named file, with the bearer token", async () => {
  const list = createAttachments();
  const { item } = list.add(new Blob(["OggS..."], { type: "audio/webm" }), { name: "voice 1.webm", voice: true });
  const { path, init } = uploadRequest(item, "tok");
  assert.equal(path, "/api/upload?voice=1");
  assert.equal(init.method, "POST");
  assert.equal(init.headers.Authorization, "Bearer tok");
  assert.equal(init.headers["Content-Type"], undefined); // fetch adds the multipart boundary
  const form = await new Request(`http://127.0.0.1${path}`, init).formData(); // parsed back as a server would
  assert.deepEqual([...form.keys()], ["file"]);
  assert.equal(form.get("file").name, "voice 1.webm");
  assert.equal(await form.get("file").text(), "OggS...");
  assert.equal(uploadRequest(list.add(file("n.md")).item, "tok").path, "/api/upload");
});

test("the uploader returns ids in order and turns failures into ApiErrors naming the file", async () => {
  const calls = [];
  const answers = [Response.json({ id: ID, kind: "document" }), Response.json({ id: ID.replace("0", "f") })];
  const up = createUploader({ fetch: async (url, init) => (calls.push(url), answers.shift()), getToken: () => "tok" });
  const list = createAttachments();
  list.add(file("a.txt"));
  list.add(file("b.txt"));
  const each = [];
  assert.deepEqual(await up.uploadAll(list.items, { onEach: (i, n) => each.push([i.name, n]) }), [ID, ID.replace("0", "f")]);
  assert.deepEqual(each, [["a.txt", 0], ["b.txt", 1]]);

  const failing = (res) => createUploader({ fetch: async () => res, getToken: () => "tok" }).upload(list.items[0]);
  const big = Response.json({ error: "the file is too large (the limit is 10 bytes)" }, { status: 413 });
  await assert.rejects(failing(big), (e) => e instanceof ApiError && e.status === 413 && /a\.txt: HTTP 413.*too large/.test(e.message));
  await assert.rejects(failing(new Response("", { status: 401 })), (e) => e.kind === "unauthorized");
  await assert.rejects(failing(Response.json({ id: "../x" })), (e) => e.kind === "protocol");
  const offline = createUploader({ fetch: async () => { throw new TypeError("fetch failed"); }, getToken: () => "tok" });
  await assert.rejects(offline.upload(list.items[0]), (e) => e.kind === "network" && /a\.txt/.test(e.message));
  const signedOut = createUploader({ fetch: async () => assert.fail("no request"), getToken: () => null });
  await assert.rejects(signedOut.upload(list.items[0]), (e) => e.kind === "unauthorized");
});

function sse(events) {
  const text = events.map(([ev, data]) => `event: ${ev}\ndata: ${JSON.stringify(data)}\n\n`).join("");
  return new Response(text, { headers: { "Content-Type": "text/event-stream" } });
}

async function until(pred) {
  while (!pred()) await new Promise((r) => setImmediate(r));
}

function page({ uploadStatus = 200 } = {}) {
  const calls = [];
  const fetch = async (url, init) => {
    calls.push({ url, init });
    if (url === "/healthz") return Response.json({ ok: true });
    if (url === "/api/commands") return Response.json({ commands: [] });
    if (url.startsWith("/api/upload")) {
      if (uploadStatus !== 200) return Response.json({ error: "roost cannot read this kind of file" }, { status: uploadStatus });
      const f = init.body.get("file");
      return Response.json({ id: ID, kind: "document", name: f.name, size: f.size });
    }
    if (url === "/api/chat/stream") return sse([["final", { text: "got it", kind: "answer" }]]);
    return new Response("", { status: 404 });
  };
  const win = fakeWindow({ url: "http://127.0.0.1:8787/#token=tok", fetch });
  const started = startPage(win);
  const $ = (id) => win.document.getElementById(id);
  const fire = (type, ev) => win.listeners.get(type).forEach((fn) => fn({ preventDefault() { ev.prevented = true; }, ...ev }));
  return { win, calls, started, $, fire };
}

test("a pasted image and a dropped file become chips; remove takes one away; send uploads then names the ids", async () => {
  const p = page();
  await p.started.ready;
  const chips = p.$("chips");
  assert.equal(chips.hidden, true);
  const pasted = {};
  p.fire("paste", Object.assign(pasted, { clipboardData: { files: [new File([new Uint8Array(2048)], "", { type: "image/png" })] } }));
  assert.equal(pasted.prevented, true);
  const textPaste = {};
  p.fire("paste", Object.assign(textPaste, { clipboardData: { files: [], items: [{ kind: "string" }] } }));
  assert.equal(textPaste.prevented, undefined); // text pastes into the box as usual
  p.fire("drop", { dataTransfer: { files: [file("notes.md", "# hi")] } });
  p.fire("drop", { dataTransfer: { files: [file("extra.csv", "a,b")] } });
  assert.equal(chips.hidden, false);
  assert.deepEqual(chips.children.map((c) => c.textContent), ["pasted image.png2.0 KB", "notes.md4 B", "extra.csv3 B"]);
  chips.children[2].children[3].dispatch("click"); // remove extra.csv
  assert.equal(chips.children.length, 2);

  p.$("input").value = "what is this?";
  p.$("send-form").dispatch("submit");
  await until(() => p.calls.some((c) => c.url === "/api/chat/stream"));
  const uploads = p.calls.filter((c) => c.url === "/api/upload");
  assert.deepEqual(uploads.map((c) => c.init.body.get("file").name), ["pasted image.png", "notes.md"]);
  const body = JSON.parse(p.calls.find((c) => c.url === "/api/chat/stream").init.body);
  assert.deepEqual(body, { text: "what is this?", chat: "default", attachments: [ID, ID] });
  await until(() => !p.started.chat.busy && p.$("chips").hidden);
  const [asked] = p.started.chat.messages;
  assert.equal(asked.text, "what is this?"); // what was typed; the files are chips, not text
  assert.deepEqual(asked.sent.map((f) => [f.name, f.kind, f.size]), [["pasted image.png", "photo", 2048], ["notes.md", "document", 4]]);
  assert.ok(asked.sent[0].blob instanceof Blob); // its thumbnail is drawn from the file itself
});

test("a refused upload keeps the text and the chips and says why", async () => {
  const p = page({ uploadStatus: 415 });
  await p.started.ready;
  p.fire("drop", { dataTransfer: { files: [file("tool.exe", "MZ")] } });
  p.$("input").value = "run it";
  p.$("send-form").dispatch("submit");
  await until(() => /Not sent/.test(p.$("status").textContent));
  assert.match(p.$("status").textContent, /tool\.exe: HTTP 415.*cannot read this kind of file/);
  assert.equal(p.$("input").value, "run it");
  assert.equal(p.$("chips").children.length, 1);
  assert.equal(p.calls.some((c) => c.url === "/api/chat/stream"), false);
  assert.equal(p.$("mic").hidden, true); // no MediaRecorder in this window
});
