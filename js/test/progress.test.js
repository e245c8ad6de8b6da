import { test } from "node:test";
import assert from "node:assert/strict";
import { progressEvent } from "../api_turn.js";
import { applyProgress, busyStatus, formatMs, retryLine, toolLabel, toolSummary } from "../progress.js";
import { createThemeStore, nextTheme, THEME_KEY } from "../theme.js";
import { FakeStorage } from "../testlib/fake_dom.js";

test("progressEvent keeps well-formed tool, retry and info events only", () => {
  assert.deepEqual(progressEvent("tool", { id: "c1", name: "me.weather", state: "start", args: '{"city":"Oslo"}' }), {
    type: "tool", id: "c1", name: "me.weather", state: "start", args: '{"city":"Oslo"}', result: "", ms: null,
  });
  assert.equal(progressEvent("tool", { name: "x", state: "exploded" }), null);
  assert.equal(progressEvent("tool", { state: "start" }), null);
  assert.deepEqual(progressEvent("retry", { attempt: 2, max: 4, reason: "the model server is busy" }), {
    type: "retry", attempt: 2, max: 4, reason: "the model server is busy",
  });
  assert.equal(progressEvent("retry", { attempt: "2" }), null);
  assert.deepEqual(progressEvent("info", { model: "qwen3:8b" }), { type: "info", model: "qwen3:8b" });
  assert.equal(progressEvent("info", {}), null);
  assert.equal(progressEvent("other", { model: "x" }), null);
  assert.equal(progressEvent("tool", { name: "x", state: "done", result: "r".repeat(5000) }).result.length, 2000);
});

test("tool events build cards in call order; done and error fill in the result and time", () => {
  let msg = { tools: [] };
  const step = (ev) => (msg = { ...msg, ...applyProgress(msg, { type: "tool", ...ev }) });
  step({ id: "a", name: "memory_save", state: "start", args: "{}", result: "", ms: null });
  step({ id: "b", name: "me.sum", state: "start", args: "[1,2]", result: "", ms: null });
  assert.equal(busyStatus(msg, "m1"), "Running memory_save, me.sum… · m1");
  step({ id: "a", name: "memory_save", state: "done", args: "", result: "saved", ms: 12 });
  step({ id: "b", name: "me.sum", state: "error", args: "", result: "ZeroDivisionError", ms: 1500 });
  assert.deepEqual(
    msg.tools.map((t) => [t.id, t.state, t.args, t.result, t.ms]),
    [["a", "done", "{}", "saved", 12], ["b", "error", "[1,2]", "ZeroDivisionError", 1500]],
  );
  assert.equal(toolSummary(msg.tools[0]), "memory_save · done in 12 ms");
  assert.equal(toolSummary(msg.tools[1]), "me.sum · failed in 1.5 s");
  assert.equal(toolSummary({ name: "x", state: "start" }), "x · running…");
});

test("a retry is one line, and the status says it", () => {
  const msg = { status: "pending", ...applyProgress({}, { type: "retry", attempt: 2, max: 4, reason: "the model server is busy." }) };
  assert.equal(msg.notice, "the model server is busy, retrying 2/4");
  assert.equal(busyStatus(msg, ""), "The model server is busy, retrying 2/4…");
  assert.equal(retryLine({ attempt: 1, max: null, reason: "" }), "the model server did not answer, retrying 1");
  assert.deepEqual(applyProgress({}, { type: "info", model: "gpt" }), { model: "gpt" });
  assert.equal(busyStatus({ status: "streaming" }, "gpt"), "Answering… · gpt");
  assert.equal(formatMs(25000), "25 s");
});

test("the theme cycles system, light, dark and is remembered", () => {
  assert.equal(nextTheme("system"), "light");
  assert.equal(nextTheme("light"), "dark");
  assert.equal(nextTheme("dark"), "system");
  assert.equal(nextTheme("bogus"), "system");
  const storage = new FakeStorage();
  const themes = createThemeStore(storage);
  assert.equal(themes.get(), "system");
  themes.set("dark");
  assert.equal(storage.getItem(THEME_KEY), "dark");
  assert.equal(createThemeStore(storage).get(), "dark");
  themes.set("system");
  assert.equal(storage.getItem(THEME_KEY), null);
  storage.setItem(THEME_KEY, "<script>");
  assert.equal(themes.get(), "system");
  const broken = { getItem: () => { throw new Error("denied"); }, setItem: () => { throw new Error("denied"); } };
  assert.equal(createThemeStore(broken).get(), "system");
  assert.equal(createThemeStore(broken).set("light"), "light");
});

test("a tool is named as the person knows it: me.x for the wire name me__x (forge/names.py)", () => {
  const cases = [
    ["me__wordcount", "me.wordcount"],
    ["me__daily_log", "me.daily_log"],
    ["draft__wordcount", "me.wordcount (draft)"],
    ["memory_save", "memory_save"],
    ["forge_create", "forge_create"],
    ["me__", "me__"], // no bare name: not a saved tool's wire name
    ["me__Bad", "me__Bad"], // names are lowercase
    ["me__a__b", "me__a__b"], // "__" never occurs in a name
    ["me__9lives", "me__9lives"], // a letter first
    [`me__${"a".repeat(42)}`, `me__${"a".repeat(42)}`], // at most 41 characters
    ["mcp__github__list_issues", "mcp__github__list_issues"],
  ];
  for (const [wire, shown] of cases) assert.equal(toolLabel(wire), shown, wire);
  assert.equal(toolSummary({ name: "me__wordcount", state: "done", ms: 5 }), "me.wordcount · done in 5 ms");
  assert.equal(busyStatus({ tools: [{ name: "me__wordcount", state: "start" }] }, ""), "Running me.wordcount…");
});
