// The static files fit together the way the daemon serves them:
// GET / -> index.html, GET /static/<file> -> js/<file> (flat).
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, readFileSync, readdirSync } from "node:fs";

const dir = new URL("../", import.meta.url);
const read = (name) => readFileSync(new URL(name, dir), "utf8");
const modules = readdirSync(dir).filter((f) => f.endsWith(".js"));
const PURE = [
  "sse.js", "render.js", "commands.js", "api.js", "api_util.js", "api_turn.js", "api_history.js", "chat.js",
  "chat_history.js", "conversation.js", "progress.js", "markdown.js", "storage.js", "theme.js", "proactive.js",
];

test("index.html loads app.js as a module and style.css from /static/", () => {
  const html = read("index.html");
  assert.match(html, /<script type="module" src="\/static\/app\.js"><\/script>/);
  assert.match(html, /<link rel="stylesheet" href="\/static\/style\.css">/);
  for (const m of html.matchAll(/(?:src|href)="\/static\/([^"]+)"/g)) {
    assert.ok(existsSync(new URL(m[1], dir)), `index.html names /static/${m[1]}, which does not exist`);
  }
  assert.match(html, /<meta name="viewport"/);
  assert.match(html, /Content-Security-Policy[\s\S]*script-src 'self'/);
  assert.doesNotMatch(html, /<script(?![^>]*\bsrc=)[^>]*>/, "no inline script (the CSP forbids it)");
  assert.doesNotMatch(html, /\son[a-z]+=/i, "no inline event handlers");
  assert.doesNotMatch(html, /\sstyle=/i, "no inline styles (the CSP forbids them)");
});

test("every module import is a flat relative path to a file that exists", () => {
  for (const name of modules) {
    const src = read(name);
    for (const m of src.matchAll(/^\s*import\s[^;]*?from\s+"([^"]+)";/gm)) {
      assert.match(m[1], /^\.\/[a-z_]+\.js$/, `${name} imports ${m[1]}: use ./file.js (served as /static/file.js)`);
      assert.ok(modules.includes(m[1].slice(2)), `${name} imports missing ${m[1]}`);
    }
  }
});

test("the pure modules touch no DOM or browser storage", () => {
  for (const name of PURE) {
    const code = read(name)
      .replace(/\/\*[\s\S]*?\*\//g, "")
      .replace(/\/\/.*$/gm, "");
    assert.doesNotMatch(code, /\b(document|window|localStorage|sessionStorage|innerHTML|navigator|location)\b/, name);
  }
});

test("every element app.js looks up exists in index.html, once", () => {
  const html = read("index.html");
  const list = /const ELEMENT_IDS = \[([^\]]+)\]/.exec(read("app.js"))[1];
  const ids = [...list.matchAll(/"([^"]+)"/g)].map((m) => m[1]);
  assert.ok(ids.length >= 10);
  for (const id of ids) {
    const count = html.split(`id="${id}"`).length - 1;
    assert.equal(count, 1, `#${id} appears ${count} times in index.html`);
  }
});

test("style.css has a dark scheme and a phone-width layout", () => {
  const css = read("style.css");
  assert.match(css, /@media \(prefers-color-scheme: dark\)/);
  assert.match(css, /@media \(max-width: \d+px\)/);
  assert.match(css, /\[hidden\]\s*\{\s*display: none !important;/);
  // Braces balance (a cheap syntax check).
  assert.equal(css.split("{").length, css.split("}").length);
});
