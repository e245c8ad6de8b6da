// The sign-in view's words are true however the token came (s46 newcomer, finding 4):
// a fresh browser opening a #token= link with a wrong token was told "The daemon
// refused the stored token", and the form said the daemon "printed it at its first
// start" (never so under systemd or with stdout piped). Both now name the command
// that prints the page's link, “roost web-token --link”.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { startPage } from "../app.js";
import { fakeWindow } from "../testlib/fake_dom.js";

function daemon(token) {
  return async (url, init) => {
    if (url === "/healthz") return Response.json({ ok: true });
    if (init.headers.Authorization !== `Bearer ${token}`) return new Response("", { status: 401 });
    if (url === "/api/commands") return Response.json({ commands: [] });
    return new Response("", { status: 404 });
  };
}

const els = (win) => ({
  view: win.document.getElementById("token-view"),
  message: win.document.getElementById("token-message"),
});

test("a fresh browser's link with a wrong token: refused, not called the stored one", async () => {
  const win = fakeWindow({ url: "http://127.0.0.1:8787/#token=wrong-token", fetch: daemon("right") });
  await startPage(win).ready;
  const e = els(win);
  assert.equal(e.view.hidden, false);
  assert.doesNotMatch(e.message.textContent, /stored/);
  assert.match(e.message.textContent, /refused this access token/);
  assert.match(e.message.textContent, /“roost web-token --link” prints the current link/);
});

test("the form names the command that prints the link, not a first start", async () => {
  const win = fakeWindow({ fetch: daemon("right") });
  await startPage(win).ready;
  const e = els(win);
  assert.match(e.message.textContent, /“roost web-token --link” prints the link/);
  assert.doesNotMatch(e.message.textContent, /first start/);
});

test("the form's help paragraph names it too", () => {
  const page = readFileSync(new URL("../index.html", import.meta.url), "utf8");
  assert.match(page, /<code>roost web-token --link<\/code> prints this page's link/);
  assert.doesNotMatch(page, /The first time the daemon starts it prints/);
});
