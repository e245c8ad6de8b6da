import { test } from "node:test";
import assert from "node:assert/strict";
import { cleanToken, createTokenStore, createTranscriptStore, tokenFromHash } from "../storage.js";
import { FakeStorage } from "../testlib/fake_dom.js";


class BrokenStorage {
  getItem() {
    throw new Error("SecurityError");
  }
  setItem() {
    throw new Error("QuotaExceededError");
  }
  removeItem() {
    throw new Error("SecurityError");
  }
}

test("tokenFromHash reads the token and keeps the rest of the fragment", () => {
  assert.deepEqual(tokenFromHash("#token=abc123"), { token: "abc123", rest: "" });
  assert.deepEqual(tokenFromHash("token=abc123"), { token: "abc123", rest: "" });
  assert.deepEqual(tokenFromHash("#x=1&token=t-_.~%2B&y=2"), { token: "t-_.~+", rest: "#x=1&y=2" });
  assert.deepEqual(tokenFromHash(""), { token: null, rest: "" });
  assert.deepEqual(tokenFromHash("#section"), { token: null, rest: "#section" });
  assert.deepEqual(tokenFromHash("#token="), { token: null, rest: "" });
  assert.deepEqual(tokenFromHash("#token=a%20b"), { token: null, rest: "" }); // spaces: not a token
  assert.deepEqual(tokenFromHash("#token=%E0%A4%A"), { token: null, rest: "" }); // bad escape
});

test("cleanToken accepts a bare token, a Bearer header or the start-up URL", () => {
  assert.equal(cleanToken("  abc.DEF-123_~  "), "abc.DEF-123_~");
  assert.equal(cleanToken("Bearer abc"), "abc");
  assert.equal(cleanToken("http://127.0.0.1:8787/#token=s3cret"), "s3cret");
  assert.equal(cleanToken(""), null);
  assert.equal(cleanToken("two words"), null);
  assert.equal(cleanToken("x".repeat(513)), null);
  assert.equal(cleanToken("tök"), null);
  assert.equal(cleanToken(42), null);
});

test("token store: set, get, clear; invalid tokens are refused", () => {
  const s = new FakeStorage();
  const tokens = createTokenStore(s);
  assert.equal(tokens.get(), null);
  assert.equal(tokens.set(" abc "), "abc");
  assert.equal(tokens.get(), "abc");
  assert.equal(s.getItem("roost.token"), "abc");
  assert.equal(createTokenStore(s).get(), "abc"); // survives a reload
  assert.throws(() => tokens.set("not a token"));
  assert.equal(tokens.get(), "abc");
  tokens.clear();
  assert.equal(tokens.get(), null);
  assert.equal(s.getItem("roost.token"), null);
});

test("a storage that throws falls back to memory for this page", () => {
  const tokens = createTokenStore(new BrokenStorage());
  tokens.set("abc");
  assert.equal(tokens.get(), "abc");
  tokens.clear();
  assert.equal(tokens.get(), null);
  const none = createTokenStore(undefined);
  none.set("xyz");
  assert.equal(none.get(), "xyz");
});

test("transcript store keeps the last messages and drops malformed ones", () => {
  const s = new FakeStorage();
  const t = createTranscriptStore(s, { limit: 3 });
  assert.deepEqual(t.load(), []);
  const msgs = [1, 2, 3, 4].map((id) => ({ id, role: id % 2 ? "user" : "assistant", text: `m${id}`, kind: "", status: "done", error: "", request: "x" }));
  t.save(msgs);
  assert.deepEqual(t.load().map((m) => m.id), [2, 3, 4]);
  assert.equal(t.load()[0].request, undefined);
  s.setItem("roost.transcript", JSON.stringify([{ id: 1, role: "system", text: "x" }, { id: 2, role: "user", text: 5 }, { id: 3, role: "user", text: "ok" }]));
  assert.deepEqual(t.load().map((m) => m.id), [3]);
  s.setItem("roost.transcript", "{not json");
  assert.deepEqual(t.load(), []);
  t.clear();
  assert.equal(s.getItem("roost.transcript"), null);
});
