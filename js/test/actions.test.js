// actions.js (one-tap actions of a reply) and its wiring: api.js keeps them,
// app.js shows them as buttons whose press sends the command as the next message.
import { test } from "node:test";
import assert from "node:assert/strict";
import { actionButtons, cleanActions, withActions } from "../actions.js";
import { startPage } from "../app.js";
import { FakeDocument, fakeWindow } from "../testlib/fake_dom.js";

const enc = new TextEncoder();

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

async function until(pred) {
  while (!pred()) await new Promise((r) => setImmediate(r));
}

test("only well-formed actions are kept: a label and a short slash command", () => {
  const long = "/yes " + "x".repeat(60);
  const raw = [
    { label: "Keep as memory", command: "/yes k3f9" },
    { label: "", command: "/yes a" },
    { label: "No slash", command: "yes k3f9" },
    { label: "Too long", command: long },
    { label: "<b>html</b>", command: "/no k3f9" },
    null,
    "text",
  ];
  assert.deepEqual(cleanActions(raw), [
    { label: "Keep as memory", command: "/yes k3f9" },
    { label: "<b>html</b>", command: "/no k3f9" },
  ]);
  assert.deepEqual(withActions({ text: "t" }, undefined), { text: "t" });
  assert.deepEqual(withActions({ text: "t" }, [{ label: "A", command: "/a" }]), {
    text: "t",
    actions: [{ label: "A", command: "/a" }],
  });
});

test("a pressed button sends its command once and disables its row", () => {
  const doc = new FakeDocument("<html><body></body></html>");
  const sent = [];
  const buttons = actionButtons(
    doc,
    [
      { label: "Keep as memory", command: "/yes k3f9" },
      { label: "Keep as steering", command: "/yes k3f9 steering" },
    ],
    (c) => sent.push(c),
  );
  assert.deepEqual(
    buttons.map((b) => b.textContent),
    ["Keep as memory", "Keep as steering"],
  );
  buttons[1].dispatch("click");
  buttons[1].dispatch("click");
  buttons[0].dispatch("click");
  assert.deepEqual(sent, ["/yes k3f9 steering"]);
  assert.ok(buttons.every((b) => b.disabled));
});

test("the page shows a reply's actions and a press sends the command as the next turn", async () => {
  const bodies = [];
  const fetch = async (url, init) => {
    if (url === "/healthz") return Response.json({ ok: true });
    if (url === "/api/commands") return Response.json({ commands: [] });
    if (url === "/api/chat/stream") {
      const body = JSON.parse(init.body);
      bodies.push(body.text);
      if (bodies.length === 1) {
        const actions = [
          { label: "Keep as memory", command: "/yes k3f9" },
          { label: "Keep as steering", command: "/yes k3f9 steering" },
        ];
        return sse([["final", { text: "Okay. 📌 Keep it?", kind: "answer", actions }]]);
      }
      return sse([["final", { text: "Kept as a steering line.", kind: "command" }]]);
    }
    return new Response("", { status: 404 });
  };
  const win = fakeWindow({ url: "http://127.0.0.1:8787/#token=tok", fetch });
  const { ready, chat } = startPage(win);
  await ready;
  await chat.send("From now on, always answer in German.");
  const log = win.document.getElementById("messages");
  const reply = log.children[1];
  const row = reply.children.find((c) => c.className === "actions");
  assert.deepEqual(
    row.children.map((b) => b.textContent),
    ["Keep as memory", "Keep as steering"],
  );
  row.children[1].dispatch("click");
  await until(() => bodies.length === 2 && !chat.busy);
  assert.deepEqual(bodies, ["From now on, always answer in German.", "/yes k3f9 steering"]);
  const body = (m) => m.children.find((c) => c.className === "body");
  assert.equal(body(log.children[2]).textContent, "/yes k3f9 steering");
  assert.match(body(log.children[3]).innerHTML, /Kept as a steering line/);
});
