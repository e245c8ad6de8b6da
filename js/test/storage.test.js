import { test } from "node:test";
import assert from "node:assert/strict";
import { cleanToken, createTokenStore, createTranscriptStore, sha256Hex, tokenFromHash, tokenKey } from "../storage.js";
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
  const me = { key: tokenKey("tok") };
  assert.deepEqual(t.load(me), []);
  const msgs = [1, 2, 3, 4].map((id) => ({ id, role: id % 2 ? "user" : "assistant", text: `m${id}`, kind: "", status: "done", error: "", request: "x" }));
  t.save(msgs);
  assert.deepEqual(t.load(me).map((m) => m.id), [2, 3, 4]);
  assert.equal(t.load(me)[0].request, undefined);
  const bad = [{ id: 1, role: "system", text: "x" }, { id: 2, role: "user", text: 5 }, { id: 3, role: "user", text: "ok" }];
  s.setItem("roost.transcript", JSON.stringify({ owner: me, messages: bad }));
  assert.deepEqual(t.load(me).map((m) => m.id), [3]);
  s.setItem("roost.transcript", "{not json");
  assert.deepEqual(t.load(me), []);
  t.clear();
  assert.equal(s.getItem("roost.transcript"), null);
});

test("sha256Hex is SHA-256; the transcript's owner is a hash, never the token", () => {
  assert.equal(sha256Hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  assert.equal(sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  assert.equal(sha256Hex("a".repeat(56)), "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a");
  const s = new FakeStorage();
  const t = createTranscriptStore(s);
  t.load({ key: tokenKey("secret-token-123") });
  t.save([{ id: 1, role: "user", text: "hi", kind: "", status: "done", error: "" }]);
  assert.doesNotMatch(s.getItem("roost.transcript"), /secret-token-123/);
  assert.notEqual(tokenKey("secret-token-123"), tokenKey("secret-token-124"));
});

test("the transcript is its account's: another token's, another tenant's or an unowned one is not loaded, and removed", () => {
  const s = new FakeStorage();
  const alice = createTranscriptStore(s);
  alice.load({ key: tokenKey("alice-token") });
  assert.equal(alice.setTenant("alice"), true);
  alice.save([{ id: 1, role: "user", text: "alice's secret", kind: "", status: "done", error: "", outboxId: 4 }]);
  assert.equal(JSON.parse(s.getItem("roost.transcript")).owner.tenant, "alice");
  // the same account again (a reload): shown
  assert.deepEqual(createTranscriptStore(s).load({ key: tokenKey("alice-token") }).map((m) => m.text), ["alice's secret"]);
  // another token: nothing, and alice's transcript is gone
  const bob = createTranscriptStore(s);
  assert.deepEqual(bob.load({ key: tokenKey("bob-token") }), []);
  assert.equal(s.getItem("roost.transcript"), null);
  // the same token, now another tenant's (told at load or later): not shown
  alice.save([{ id: 1, role: "user", text: "alice's secret", kind: "", status: "done", error: "" }]);
  assert.deepEqual(createTranscriptStore(s).load({ key: tokenKey("alice-token"), tenant: "mallory" }), []);
  alice.save([{ id: 1, role: "user", text: "alice's secret", kind: "", status: "done", error: "" }]);
  const later = createTranscriptStore(s);
  assert.equal(later.load({ key: tokenKey("alice-token") }).length, 1);
  assert.equal(later.setTenant("mallory"), false);
  assert.equal(s.getItem("roost.transcript"), null);
  // an older page's transcript (no owner), and nothing saved without an owner
  s.setItem("roost.transcript", JSON.stringify([{ id: 1, role: "user", text: "whose?", status: "done" }]));
  assert.deepEqual(createTranscriptStore(s).load({ key: tokenKey("alice-token") }), []);
  assert.equal(s.getItem("roost.transcript"), null);
  const nobody = createTranscriptStore(s);
  nobody.save([{ id: 1, role: "user", text: "x", kind: "", status: "done", error: "" }]);
  assert.equal(s.getItem("roost.transcript"), null);
});
