import { test } from "node:test";
import assert from "node:assert/strict";
import { commandWord, completeCommand, matchCommands, normalizeCommands } from "../commands.js";

const BODY = {
  commands: [
    { name: "memory", usage: "/memory [list|show NAME|forget NAME]", summary: "What roost remembers" },
    { name: "help", usage: "/help [command]", summary: "List commands" },
    { name: "tool", usage: "/tool list|show|delete", summary: "Your saved tools" },
    { name: "tools", usage: "/tools", summary: "Alias" },
    { name: "mem", usage: "/mem", summary: "Short" },
  ],
};
const CMDS = normalizeCommands(BODY);
const names = (list) => list.map((c) => c.name);

test("normalizeCommands keeps well-formed entries and fills defaults", () => {
  const list = normalizeCommands({
    commands: [
      { name: "ok", usage: "/ok x", summary: "fine" },
      { name: "/slashed" },
      { name: "OK" }, // duplicate of ok, case-insensitive
      { name: "bad name" },
      { name: "" },
      { usage: "/nameless" },
      null,
      "help",
      { name: "<img>" },
    ],
  });
  assert.deepEqual(list, [
    { name: "ok", usage: "/ok x", summary: "fine" },
    { name: "slashed", usage: "/slashed", summary: "" },
  ]);
  assert.deepEqual(normalizeCommands(null), []);
  assert.deepEqual(normalizeCommands({ commands: "nope" }), []);
  assert.deepEqual(normalizeCommands([]), []);
});

test("commandWord", () => {
  assert.equal(commandWord("hello"), null);
  assert.equal(commandWord(" /help"), null);
  assert.deepEqual(commandWord("/"), { word: "", complete: false });
  assert.deepEqual(commandWord("/he"), { word: "he", complete: false });
  assert.deepEqual(commandWord("/help "), { word: "help", complete: true });
  assert.deepEqual(commandWord("/help\nmore"), { word: "help", complete: true });
});

test("no hints unless the input starts with /", () => {
  assert.deepEqual(matchCommands("", CMDS), []);
  assert.deepEqual(matchCommands("help", CMDS), []);
  assert.deepEqual(matchCommands("what is /help", CMDS), []);
});

test("prefix matches, exact match first, then by name", () => {
  assert.deepEqual(names(matchCommands("/", CMDS)), ["help", "mem", "memory", "tool", "tools"]);
  assert.deepEqual(names(matchCommands("/me", CMDS)), ["mem", "memory"]);
  assert.deepEqual(names(matchCommands("/mem", CMDS)), ["mem", "memory"]);
  assert.deepEqual(names(matchCommands("/tools", CMDS)), ["tools"]);
  assert.deepEqual(names(matchCommands("/TO", CMDS)), ["tool", "tools"]);
  assert.deepEqual(names(matchCommands("/x", CMDS)), []);
  const exactFirst = normalizeCommands({ commands: [{ name: "ab" }, { name: "A_x" }, { name: "a" }, { name: "aa" }] });
  assert.deepEqual(names(matchCommands("/a", exactFirst)), ["a", "A_x", "aa", "ab"]);
});

test("after the command word, only that command is shown with its usage", () => {
  const hit = matchCommands("/memory show notes", CMDS);
  assert.deepEqual(hit, [{ name: "memory", usage: "/memory [list|show NAME|forget NAME]", summary: "What roost remembers" }]);
  assert.deepEqual(matchCommands("/me show", CMDS), []);
});

test("Tab completes the first match and adds a space", () => {
  assert.equal(completeCommand("/he", CMDS), "/help ");
  assert.equal(completeCommand("/me", CMDS), "/mem ");
  assert.equal(completeCommand("/memo", CMDS), "/memory ");
  assert.equal(completeCommand("/", CMDS), "/help ");
  assert.equal(completeCommand("/TOO", CMDS), "/tool ");
});

test("nothing to complete", () => {
  assert.equal(completeCommand("/zzz", CMDS), null);
  assert.equal(completeCommand("/help ", CMDS), null);
  assert.equal(completeCommand("/help me", CMDS), null);
  assert.equal(completeCommand("hello", CMDS), null);
  assert.equal(completeCommand("/he", []), null);
});
