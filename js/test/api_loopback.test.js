// api.js against a real HTTP server on 127.0.0.1, through node's own fetch:
// real sockets, real chunked transfer, writes split inside UTF-8 sequences.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import http from "node:http";
import { once } from "node:events";
import { createApi } from "../api.js";

const TOKEN = "loopback-token";
let server;
let base;
const seen = { closedEarly: 0, requests: [] };

function readBody(req) {
  return new Promise((resolve, reject) => {
    const parts = [];
    req.on("data", (c) => parts.push(c));
    req.on("end", () => resolve(Buffer.concat(parts).toString("utf8")));
    req.on("error", reject);
  });
}

const tick = () => new Promise((r) => setTimeout(r, 1));

async function handle(req, res) {
  const body = req.method === "POST" ? JSON.parse(await readBody(req)) : null;
  seen.requests.push({ url: req.url, method: req.method, auth: req.headers.authorization, body });
  if (req.url === "/healthz") return res.writeHead(200, { "Content-Type": "application/json" }).end('{"ok": true}');
  if (req.headers.authorization !== `Bearer ${TOKEN}`) {
    return res.writeHead(401, { "Content-Type": "application/json" }).end('{"error": "unauthorized"}');
  }
  if (req.url === "/api/commands") {
    return res
      .writeHead(200, { "Content-Type": "application/json" })
      .end(JSON.stringify({ commands: [{ name: "help", usage: "/help [command]", summary: "List commands" }] }));
  }
  if (req.url === "/api/chat/stream" && body.text === "forever") {
    res.writeHead(200, { "Content-Type": "text/event-stream", "Cache-Control": "no-cache" });
    res.write('event: delta\ndata: {"text": "thinking"}\n\n');
    const timer = setInterval(() => res.write(": keepalive\n\n"), 5);
    res.on("close", () => {
      clearInterval(timer);
      if (!res.writableEnded) seen.closedEarly++;
    });
    return undefined;
  }
  if (req.url === "/api/chat/stream") {
    res.writeHead(200, { "Content-Type": "text/event-stream", "Cache-Control": "no-cache" });
    const reply = `Echo: ${body.text} — 🎉 日本語`;
    const wire = Buffer.from(
      ": hello\r\n\r\n" +
        [...reply].map((ch) => `event: delta\r\ndata: ${JSON.stringify({ text: ch })}\r\n\r\n`).join("") +
        `event: final\r\ndata: ${JSON.stringify({ text: reply, kind: "answer" })}\r\n\r\n`,
      "utf8",
    );
    // Write 3 bytes at a time: many writes split a multi-byte character.
    for (let i = 0; i < wire.length; i += 3) {
      res.write(wire.subarray(i, i + 3));
      if (i % 60 === 0) await tick();
    }
    return res.end();
  }
  res.writeHead(404).end("no route");
  return undefined;
}

before(async () => {
  server = http.createServer((req, res) => {
    handle(req, res).catch((err) => {
      res.destroy(err);
    });
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  base = `http://127.0.0.1:${server.address().port}`;
});

after(async () => {
  server.closeAllConnections();
  server.close();
  await once(server, "close");
});

const client = (token = TOKEN) => createApi({ fetch: globalThis.fetch, getToken: () => token, baseUrl: base });

test("a streamed reply over a real socket arrives whole and in order", async () => {
  let last = "";
  let count = 0;
  const result = await client().streamChat("héllo", {
    chat: "default",
    onDelta: (_piece, soFar) => {
      count++;
      assert.ok(soFar.startsWith(last), "the text only grows");
      last = soFar;
    },
  });
  const expected = "Echo: héllo — 🎉 日本語";
  assert.deepEqual(result, { text: expected, kind: "answer" });
  assert.equal(last, expected);
  assert.equal(count, [...expected].length);
  const req = seen.requests.find((r) => r.url === "/api/chat/stream");
  assert.equal(req.auth, `Bearer ${TOKEN}`);
  assert.deepEqual(req.body, { text: "héllo", chat: "default" });
});

test("a wrong token is refused with 401", async () => {
  await assert.rejects(client("wrong").streamChat("x"), (err) => err.kind === "unauthorized");
  await assert.rejects(client("wrong").commands(), (err) => err.kind === "unauthorized");
});

test("commands and health over a real socket", async () => {
  const body = await client().commands();
  assert.equal(body.commands[0].name, "help");
  assert.equal(await client(null).health(), true);
});

test("aborting closes the connection to the server", { timeout: 30000 }, async () => {
  const ac = new AbortController();
  const before = seen.closedEarly;
  const turn = client().streamChat("forever", { signal: ac.signal, onDelta: () => ac.abort() });
  await assert.rejects(turn, (err) => err.kind === "aborted" && err.partial === "thinking");
  // The server notices the closed socket (it keeps writing keepalives).
  while (seen.closedEarly === before) await new Promise((r) => setTimeout(r, 5));
  assert.equal(seen.closedEarly, before + 1);
});

test("a port with nothing listening is a network error", async () => {
  const probe = http.createServer();
  probe.listen(0, "127.0.0.1");
  await once(probe, "listening");
  const port = probe.address().port;
  probe.close();
  await once(probe, "close");
  const api = createApi({ fetch: globalThis.fetch, getToken: () => TOKEN, baseUrl: `http://127.0.0.1:${port}` });
  await assert.rejects(api.streamChat("x"), (err) => err.kind === "network");
  assert.equal(await api.health(), false);
});
