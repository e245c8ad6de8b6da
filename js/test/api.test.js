import { test } from "node:test";
import assert from "node:assert/strict";
import { ApiError, createApi, decodeChunks, readEvents } from "../api.js";

const enc = new TextEncoder();

/** A body that delivers exactly these byte chunks, and records a cancel. */
function byteStream(chunks, { error = null, endless = false } = {}) {
  const state = { cancelled: false, pulled: 0 };
  let i = 0;
  const stream = new ReadableStream({
    pull(controller) {
      state.pulled++;
      if (i < chunks.length) {
        controller.enqueue(chunks[i++]);
      } else if (error) {
        controller.error(error);
      } else if (endless) {
        controller.enqueue(enc.encode(": keepalive\n\n"));
      } else {
        controller.close();
      }
    },
    cancel() {
      state.cancelled = true;
    },
  });
  return { stream, state };
}

/** Split bytes at the given offsets. */
function splitBytes(bytes, cuts) {
  const out = [];
  let prev = 0;
  for (const c of [...cuts, bytes.length]) {
    out.push(bytes.slice(prev, c));
    prev = c;
  }
  return out;
}

function sseResponse(chunks, opts) {
  const { stream, state } = byteStream(chunks, opts);
  const res = new Response(stream, { status: 200, headers: { "Content-Type": "text/event-stream" } });
  return { res, state };
}

function fakeFetch(handler) {
  const calls = [];
  const fn = async (url, init) => {
    calls.push({ url, init, body: init.body ? JSON.parse(init.body) : undefined });
    return handler(url, init, calls.length);
  };
  fn.calls = calls;
  return fn;
}

const api = (fetch, token = "tok") => createApi({ fetch, getToken: () => token });

const STREAM_TEXT =
  ": ready\r\n\r\n" +
  'event: delta\r\ndata: {"text": "Grüß "}\r\n\r\n' +
  'event: delta\r\ndata: {"text": "dich 🎉"}\r\n\r\n' +
  "event: progress\r\ndata: {}\r\n\r\n" +
  'event: final\r\ndata: {"text": "Grüß dich 🎉 — final", "kind": "answer"}\r\n\r\n';

async function collect(gen) {
  const out = [];
  for await (const x of gen) out.push(x);
  return out;
}

test("decodeChunks joins a character split across byte chunks", async () => {
  const bytes = enc.encode("a🎉b€");
  for (let cut = 0; cut <= bytes.length; cut++) {
    const { stream } = byteStream(splitBytes(bytes, [cut]));
    assert.equal((await collect(decodeChunks(stream))).join(""), "a🎉b€", `cut at ${cut}`);
  }
  // Every byte alone: no replacement characters appear.
  const { stream } = byteStream([...bytes].map((b) => new Uint8Array([b])));
  const pieces = await collect(decodeChunks(stream));
  assert.equal(pieces.join(""), "a🎉b€");
  assert.ok(pieces.every((p) => !p.includes("\uFFFD")));
});

test("readEvents over bytes split at every offset", async () => {
  const bytes = enc.encode(STREAM_TEXT);
  for (let cut = 0; cut <= bytes.length; cut += 1) {
    const { stream } = byteStream(splitBytes(bytes, [cut]));
    const events = await collect(readEvents(stream));
    assert.deepEqual(events.map((e) => e.event), ["delta", "delta", "progress", "final"], `cut at ${cut}`);
    assert.equal(JSON.parse(events[1].data).text, "dich 🎉");
  }
});

test("streamChat: request shape, deltas, final replaces the streamed text", async () => {
  const bytes = enc.encode(STREAM_TEXT);
  // Cut inside "ü", inside the emoji, and between "\r" and "\n".
  const cuts = [bytes.indexOf(0xc3) + 1, bytes.indexOf(0xf0) + 2, bytes.indexOf(0x0d) + 1];
  const { res, state } = sseResponse(splitBytes(bytes, cuts.sort((a, b) => a - b)));
  const fetch = fakeFetch(() => res);
  const deltas = [];
  const result = await api(fetch).streamChat("hi there", {
    chat: "work",
    onDelta: (piece, soFar) => deltas.push([piece, soFar]),
  });
  assert.deepEqual(result, { text: "Grüß dich 🎉 — final", kind: "answer" });
  assert.deepEqual(deltas, [
    ["Grüß ", "Grüß "],
    ["dich 🎉", "Grüß dich 🎉"],
  ]);
  const [call] = fetch.calls;
  assert.equal(call.url, "/api/chat/stream");
  assert.equal(call.init.method, "POST");
  assert.equal(call.init.headers.Authorization, "Bearer tok");
  assert.equal(call.init.headers["Content-Type"], "application/json");
  assert.equal(call.init.headers.Accept, "text/event-stream");
  assert.deepEqual(call.body, { text: "hi there", chat: "work" });
  assert.equal(state.cancelled, false); // the stream had ended by itself
});

test("streamChat stops reading at the final event and releases the stream", async () => {
  const { res, state } = sseResponse([enc.encode('event: final\ndata: {"text": "done", "kind": "command"}\n\n')], {
    endless: true,
  });
  const result = await api(fakeFetch(() => res)).streamChat("/help");
  assert.deepEqual(result, { text: "done", kind: "command" });
  assert.equal(state.cancelled, true);
});

test("an unknown kind becomes answer; a missing chat is 'default'", async () => {
  const { res } = sseResponse([enc.encode('event: final\ndata: {"text": "x", "kind": "weird"}\n\n')]);
  const fetch = fakeFetch(() => res);
  assert.deepEqual(await api(fetch).streamChat("q"), { text: "x", kind: "answer" });
  assert.equal(fetch.calls[0].body.chat, "default");
});

test("an error event fails the turn with its message and the partial text", async () => {
  const { res } = sseResponse([
    enc.encode('event: delta\ndata: {"text": "par"}\n\nevent: error\ndata: {"message": "backend timed out"}\n\n'),
  ]);
  await assert.rejects(api(fakeFetch(() => res)).streamChat("q"), (err) => {
    assert.ok(err instanceof ApiError);
    assert.equal(err.kind, "server");
    assert.equal(err.message, "backend timed out");
    assert.equal(err.partial, "par");
    return true;
  });
});

test("a stream that ends without a final event is a protocol error", async () => {
  for (const body of ['event: delta\ndata: {"text": "abc"}\n\n', 'event: delta\ndata: {"text": "abc"}\n\nevent: final\ndata: {"text": "abc"}']) {
    const { res } = sseResponse([enc.encode(body)]);
    await assert.rejects(api(fakeFetch(() => res)).streamChat("q"), (err) => {
      assert.equal(err.kind, "protocol");
      assert.match(err.message, /closed before the reply finished/);
      assert.equal(err.partial, "abc");
      return true;
    });
  }
});

test("malformed event data is a protocol error", async () => {
  for (const body of ["event: delta\ndata: not json\n\n", "event: final\ndata: {\"kind\": \"answer\"}\n\n", "event: delta\ndata: 5\n\n"]) {
    const { res } = sseResponse([enc.encode(body)]);
    await assert.rejects(api(fakeFetch(() => res)).streamChat("q"), (err) => err.kind === "protocol");
  }
});

test("a connection that breaks mid-stream is a network error keeping the partial text", async () => {
  const { res } = sseResponse([enc.encode('event: delta\ndata: {"text": "so far"}\n\n')], {
    error: new TypeError("terminated"),
  });
  await assert.rejects(api(fakeFetch(() => res)).streamChat("q"), (err) => {
    assert.equal(err.kind, "network");
    assert.equal(err.partial, "so far");
    assert.match(err.message, /terminated/);
    return true;
  });
});

test("401 is 'unauthorized'; no token means no request at all", async () => {
  const fetch = fakeFetch(() => new Response('{"error": "bad token"}', { status: 401 }));
  await assert.rejects(api(fetch).streamChat("q"), (err) => err.kind === "unauthorized" && err.status === 401);
  await assert.rejects(api(fetch).commands(), (err) => err.kind === "unauthorized");
  const none = fakeFetch(() => assert.fail("fetch must not be called"));
  await assert.rejects(api(none, null).streamChat("q"), (err) => err.kind === "unauthorized");
  assert.equal(none.calls.length, 0);
});

test("an HTTP error carries the status and the server's message", async () => {
  const fetch = fakeFetch(
    () => new Response(JSON.stringify({ error: "message too long" }), { status: 413, statusText: "Payload Too Large" }),
  );
  await assert.rejects(api(fetch).streamChat("q"), (err) => {
    assert.equal(err.kind, "http");
    assert.equal(err.status, 413);
    assert.equal(err.message, "HTTP 413 Payload Too Large: message too long");
    return true;
  });
  const plain = fakeFetch(() => new Response("upstream down", { status: 502 }));
  await assert.rejects(api(plain).chat("q"), (err) => err.message === "HTTP 502: upstream down");
});

test("fetch failing outright is a network error; an abort is 'aborted'", async () => {
  const down = fakeFetch(() => {
    throw new TypeError("fetch failed");
  });
  await assert.rejects(api(down).streamChat("q"), (err) => err.kind === "network" && /fetch failed/.test(err.message));
  const aborted = fakeFetch(() => {
    throw new DOMException("The operation was aborted.", "AbortError");
  });
  await assert.rejects(api(aborted).streamChat("q"), (err) => err.kind === "aborted");
});

test("aborting while the reply streams stops it with 'aborted' and the partial text", async () => {
  const ac = new AbortController();
  const fetch = fakeFetch((_url, init) => {
    const stream = new ReadableStream({
      start(controller) {
        controller.enqueue(enc.encode('event: delta\ndata: {"text": "half"}\n\n'));
        init.signal.addEventListener("abort", () => controller.error(init.signal.reason));
      },
    });
    return new Response(stream);
  });
  const done = api(fetch).streamChat("q", { signal: ac.signal, onDelta: () => ac.abort() });
  await assert.rejects(done, (err) => err.kind === "aborted" && err.partial === "half");
});

test("a server without the streaming route falls back to POST /api/chat", async () => {
  const fetch = fakeFetch((url) =>
    url === "/api/chat/stream"
      ? new Response("not found", { status: 404 })
      : Response.json({ reply: "plain reply", kind: "refusal" }),
  );
  assert.deepEqual(await api(fetch).streamChat("q", { chat: "c" }), { text: "plain reply", kind: "refusal" });
  assert.deepEqual(fetch.calls.map((c) => c.url), ["/api/chat/stream", "/api/chat"]);
  assert.deepEqual(fetch.calls[1].body, { text: "q", chat: "c" });
});

test("chat(): reply and kind; a reply without text is a protocol error", async () => {
  const ok = fakeFetch(() => Response.json({ reply: "hello", kind: "answer" }));
  assert.deepEqual(await api(ok).chat("hi"), { text: "hello", kind: "answer" });
  const bad = fakeFetch(() => Response.json({ nope: 1 }));
  await assert.rejects(api(bad).chat("hi"), (err) => err.kind === "protocol");
  const notJson = fakeFetch(() => new Response("<html>"));
  await assert.rejects(api(notJson).chat("hi"), (err) => err.kind === "protocol");
});

test("commands() and health()", async () => {
  const body = { commands: [{ name: "help", usage: "/help", summary: "s" }] };
  const fetch = fakeFetch((url) => (url === "/api/commands" ? Response.json(body) : Response.json({ ok: true })));
  assert.deepEqual(await api(fetch).commands(), body);
  assert.equal(fetch.calls[0].init.method, "GET");
  assert.equal(fetch.calls[0].init.headers.Authorization, "Bearer tok");
  assert.equal(await api(fetch, null).health(), true); // no token needed
  assert.equal(fetch.calls[1].url, "/healthz");
  assert.equal(fetch.calls[1].init.headers.Authorization, undefined);
  const sick = fakeFetch(() => new Response("", { status: 503 }));
  assert.equal(await api(sick).health(), false);
  const down = fakeFetch(() => {
    throw new TypeError("fetch failed");
  });
  assert.equal(await api(down).health(), false);
  const wrong = fakeFetch(() => Response.json({ ok: "yes" }));
  assert.equal(await api(wrong).health(), false);
});

test("baseUrl is prefixed and createApi checks its arguments", async () => {
  const fetch = fakeFetch(() => Response.json({ ok: true }));
  await createApi({ fetch, getToken: () => "t", baseUrl: "http://127.0.0.1:9" }).health();
  assert.equal(fetch.calls[0].url, "http://127.0.0.1:9/healthz");
  assert.throws(() => createApi({ getToken: () => "t" }), TypeError);
  assert.throws(() => createApi({ fetch }), TypeError);
});

test("a reply's files come through as download links; anything else is dropped", async () => {
  const files = [
    { name: "roost-export-local.zip", mime: "application/zip", size: 2048, url: "/files/abc.DEF-_1" },
    { name: "evil", size: 1, url: "https://evil.example/x" },
    { name: "odd", size: "big", url: "/files/x" },
    { name: 7, size: 1, url: "/files/y" },
    { name: "spoken answer.ogg", mime: "audio/ogg", size: 9, url: "/files/sp" },
    { name: "odd type", mime: "text/html; charset=x<", size: 9, url: "/files/t" },
  ];
  const final = `event: final\ndata: ${JSON.stringify({ text: "here", kind: "command", files })}\n\n`;
  const { res } = sseResponse([enc.encode(final)]);
  assert.deepEqual(await api(fakeFetch(() => res)).streamChat("/export"), {
    text: "here",
    kind: "command",
    files: [
      { name: "roost-export-local.zip", url: "/files/abc.DEF-_1", size: 2048, mime: "application/zip" },
      { name: "spoken answer.ogg", url: "/files/sp", size: 9, mime: "audio/ogg" },
      { name: "odd type", url: "/files/t", size: 9, mime: "" },
    ],
  });
});
