import { test } from "node:test";
import assert from "node:assert/strict";
import { SSEParser, parseAll } from "../sse.js";

const STREAM =
  ": keepalive\n\n" +
  'event: delta\ndata: {"text": "Hel"}\n\n' +
  'event: delta\ndata: {"text": "lo — ünïcødé 🎉"}\n\n' +
  ": another comment\n" +
  'event: final\ndata: {"text": "Hello — ünïcødé 🎉",\ndata:  "kind": "answer"}\n\n';

const EXPECTED = [
  { event: "delta", data: '{"text": "Hel"}', id: "" },
  { event: "delta", data: '{"text": "lo — ünïcødé 🎉"}', id: "" },
  { event: "final", data: '{"text": "Hello — ünïcødé 🎉",\n "kind": "answer"}', id: "" },
];

function feed(chunks) {
  const p = new SSEParser();
  const out = [];
  for (const c of chunks) out.push(...p.push(c));
  out.push(...p.end());
  return { out, parser: p };
}

test("whole stream: deltas, comment lines ignored, multi-line data joined by \\n", () => {
  assert.deepEqual(parseAll(STREAM), EXPECTED);
  assert.deepEqual(JSON.parse(EXPECTED[2].data), { text: "Hello — ünïcødé 🎉", kind: "answer" });
});

test("a split at every position gives the same events", () => {
  for (const text of [STREAM, STREAM.replace(/\n/g, "\r\n"), STREAM.replace(/\n/g, "\r")]) {
    for (let i = 0; i <= text.length; i++) {
      const { out } = feed([text.slice(0, i), text.slice(i)]);
      assert.deepEqual(out, EXPECTED, `split at ${i}`);
    }
  }
});

test("one character at a time, and every chunk size", () => {
  const crlf = STREAM.replace(/\n/g, "\r\n");
  for (const text of [STREAM, crlf]) {
    for (let size = 1; size <= 17; size++) {
      const chunks = [];
      for (let i = 0; i < text.length; i += size) chunks.push(text.slice(i, i + size));
      assert.deepEqual(feed(chunks).out, EXPECTED, `chunk size ${size}`);
    }
  }
});

test("CRLF split between \\r and \\n does not make an extra blank line", () => {
  // If "\r" then "\n" were two line ends, the blank line would dispatch the
  // first data line alone.
  const { out } = feed(["data: a\r", "\ndata: b\r", "\n\r", "\n"]);
  assert.deepEqual(out, [{ event: "message", data: "a\nb", id: "" }]);
});

test("bare CR, LF and CRLF line ends may be mixed", () => {
  assert.deepEqual(parseAll("data: x\rdata: y\r\ndata: z\n\r\n"), [{ event: "message", data: "x\ny\nz", id: "" }]);
});

test("empty chunks change nothing", () => {
  const { out } = feed(["", "data: a", "", "\r", "", "\n", "", "\n", ""]);
  assert.deepEqual(out, [{ event: "message", data: "a", id: "" }]);
});

test("field parsing: no space, one space removed, colonless field, unknown fields", () => {
  const out = parseAll("data:nospace\ndata:  two\ndata\nfoo: bar\nevent:final\n\n");
  assert.deepEqual(out, [{ event: "final", data: "nospace\n two\n", id: "" }]);
});

test("only comments and blank lines give no events", () => {
  const p = new SSEParser();
  assert.deepEqual(p.push(": ping\n\n:\n\n: ping\n"), []);
  assert.deepEqual(p.end(), []);
  assert.equal(p.truncated, false);
});

test("an event without data is not dispatched, and its type does not leak", () => {
  assert.deepEqual(parseAll("event: delta\n\ndata: x\n\n"), [{ event: "message", data: "x", id: "" }]);
});

test("an unterminated last event is discarded and reported as truncated", () => {
  const p = new SSEParser();
  assert.deepEqual(p.push('event: final\ndata: {"text": "x"}\n'), []);
  assert.deepEqual(p.end(), []);
  assert.equal(p.truncated, true);
  const q = new SSEParser();
  q.push("data: x"); // no line end at all
  q.end();
  assert.equal(q.truncated, true);
});

test("id and retry fields", () => {
  const p = new SSEParser();
  const out = p.push("id: 7\nretry: 1500\ndata: a\n\nretry: soon\ndata: b\n\nid: bad\u0000id\ndata: c\n\n");
  assert.deepEqual(out.map((e) => [e.data, e.id]), [["a", "7"], ["b", "7"], ["c", "7"]]);
  assert.equal(p.retry, 1500);
  assert.equal(p.lastEventId, "7");
});

test("a leading byte-order mark is skipped once", () => {
  assert.deepEqual(parseAll("\uFEFFdata: a\n\n"), [{ event: "message", data: "a", id: "" }]);
  const { out } = feed(["", "\uFEFF", "data: a\n\n"]);
  assert.deepEqual(out, [{ event: "message", data: "a", id: "" }]);
  // A BOM later in the stream is data, not skipped.
  assert.deepEqual(parseAll("data: a\n\n\uFEFFdata: b\n\n").length, 1);
});

test("error event", () => {
  const out = parseAll('event: error\ndata: {"message": "backend down"}\n\n');
  assert.equal(out[0].event, "error");
  assert.deepEqual(JSON.parse(out[0].data), { message: "backend down" });
});

test("misuse is rejected", () => {
  const p = new SSEParser();
  assert.throws(() => p.push(new Uint8Array([1])), TypeError);
  p.end();
  assert.throws(() => p.push("data: x\n\n"), /after end/);
  assert.deepEqual(p.end(), []);
});

test("a long line arriving in many pieces is kept whole", () => {
  const big = "x".repeat(200000);
  const p = new SSEParser();
  for (let i = 0; i < big.length; i += 1000) assert.deepEqual(p.push(big.slice(i, i + 1000)), []);
  const p2 = new SSEParser();
  p2.push("data: ");
  for (let i = 0; i < big.length; i += 1000) p2.push(big.slice(i, i + 1000));
  const out = p2.push("\n\n");
  assert.equal(out.length, 1);
  assert.equal(out[0].data.length, big.length);
});
