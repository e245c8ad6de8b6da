// After a turn ends, the page asks the daemon for the newest stored messages and gives
// its own their place (`seq`), which Edit and "another answer" use (js/chat_history.js
// `sync`). An answer that was never stored (a refusal, the offline answer: the daemon's
// final says `unstored`, a failed turn) must not take the place of the stored answer
// before it: "another answer" would then answer that earlier question again. A stored
// turn whose text the daemon masked still gets its place.
import { test } from "node:test";
import assert from "node:assert/strict";
import { createHistory } from "../chat_history.js";
import { createConversation } from "../conversation.js";

const view = { clearMessages() {}, renderMessage() {}, setMore() {}, setStatus() {} };

function setUp(stored) {
  const api = { history: async () => ({ conversation: 7, more: false, running: false, messages: stored }) };
  const convo = createConversation({ view });
  const history = createHistory({ api, chatId: "c", convo, view, follow: async () => null });
  return { convo, history };
}

const STORED = [
  { seq: 11, role: "user", text: "first question", ts: 1, status: "done" },
  { seq: 12, role: "assistant", text: "first answer", ts: 1, status: "done" },
];

test("an answer never stored gets no place; the stored turn before it keeps its own", async () => {
  const { convo, history } = setUp(STORED);
  await history.load({ attach: false });
  convo.add({ role: "user", text: "hello offline" });
  const offline = convo.add({ role: "assistant", text: "No model is configured…", status: "done", unstored: true });
  await history.sync();
  assert.equal(offline.seq, undefined);
  assert.deepEqual(convo.list.map((m) => m.seq), [11, 12, undefined, undefined]);
});

test("a stored turn after a failed one gets its place; the failed one none", async () => {
  const { convo, history } = setUp([
    ...STORED,
    { seq: 13, role: "user", text: "third", ts: 3, status: "done" },
    { seq: 14, role: "assistant", text: "third answer", ts: 3, status: "done" },
  ]);
  await history.load({ attach: false });
  convo.truncate(convo.list[2]); // the page as it was before the third turn
  convo.add({ role: "user", text: "second" });
  const failed = convo.add({ role: "assistant", text: "", status: "failed", error: "the model failed" });
  const asked = convo.add({ role: "user", text: "third" });
  const answer = convo.add({ role: "assistant", text: "third answer", status: "done" });
  await history.sync();
  assert.equal(asked.seq, 13);
  assert.equal(answer.seq, 14);
  assert.equal(failed.seq, undefined);
});

test("a repeated question answered without storing takes no place from the stored one", async () => {
  const { convo, history } = setUp([
    ...STORED,
    { seq: 13, role: "user", text: "ok", ts: 3, status: "done" },
    { seq: 14, role: "assistant", text: "fine", ts: 3, status: "done" },
  ]);
  await history.load({ attach: false });
  convo.add({ role: "user", text: "ok" });
  const refused = convo.add({ role: "assistant", text: "Your budget is used up.", kind: "refusal" });
  convo.add({ role: "user", text: "ok" });
  const offline = convo.add({ role: "assistant", text: "No model…", unstored: true });
  await history.sync();
  assert.equal(refused.seq, undefined);
  assert.equal(offline.seq, undefined);
  assert.deepEqual(convo.list.slice(0, 4).map((m) => m.seq), [11, 12, 13, 14]);
});

test("a stored turn whose question the daemon masked still gets its answer's place", async () => {
  const { convo, history } = setUp([
    ...STORED,
    { seq: 13, role: "user", text: "my key is [vault:API_KEY]", ts: 3, status: "done" },
    { seq: 14, role: "assistant", text: "Saved.", ts: 3, status: "done" },
  ]);
  await history.load({ attach: false });
  convo.truncate(convo.list[2]);
  convo.add({ role: "user", text: "my key is sk-live-1234" });
  const answer = convo.add({ role: "assistant", text: "Saved.", status: "done" });
  await history.sync();
  assert.equal(answer.seq, 14);
});
