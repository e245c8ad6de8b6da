import { test } from "node:test";
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { ALLOWED_ATTR, ALLOWED_TAGS, createMarked, createRenderer, loadRenderer, safeHref } from "../markdown.js";
import { renderMarkdown as renderLite } from "../render.js";
import { Marked } from "../vendor/marked.js";
import hljs from "../vendor/highlight.js";
import purify from "../vendor/purify.js";

const md = createMarked({ Marked, hljs });
const corpus = JSON.parse(readFileSync(new URL("./xss_corpus.json", import.meta.url), "utf8")).payloads;

const TAG_RE = /<(\/?)([A-Za-z][A-Za-z0-9-]*)([^>]*)>/g;
const ATTR_RE = /\s+([a-z-]+)(?:="([^"]*)")?/gy;
const EXTRA_ATTR = ["rel", "target"];

/** Every tag of `html` is allowed, with allowed, quoted attributes and safe links. */
function assertInert(html, label) {
  const stripped = html.replace(TAG_RE, (whole, close, name, attrs) => {
    const tag = name.toLowerCase();
    assert.ok(ALLOWED_TAGS.includes(tag), `${label}: tag <${tag}> in ${html}`);
    ATTR_RE.lastIndex = 0;
    let rest = attrs;
    let m;
    while ((m = ATTR_RE.exec(attrs))) {
      const [, attr, value = ""] = m;
      assert.ok(ALLOWED_ATTR.includes(attr) || EXTRA_ATTR.includes(attr), `${label}: attribute ${attr} in ${whole}`);
      if (attr === "href") assert.ok(safeHref(value.replace(/&amp;/g, "&")), `${label}: href ${value}`);
      if (tag === "input") assert.ok(/type="checkbox"/.test(attrs) && /disabled/.test(attrs), `${label}: ${whole}`);
      rest = attrs.slice(ATTR_RE.lastIndex);
    }
    assert.match(rest, /^\s*\/?$/, `${label}: unparsed attributes in ${whole}`);
    return "";
  });
  // What is left is text: no markup may hide in it.
  assert.ok(!/[<>]/.test(stripped.replace(/&lt;|&gt;/g, "")), `${label}: stray < or > in ${html}`);
}

test("tables, blockquotes, nested lists, task lists and strikethrough render", () => {
  const html = md("| a | b |\n|---|:-:|\n| 1 | **2** |\n\n> quote\n> > nested\n\n- one\n  - two\n    1. three\n\nTasks:\n\n- [ ] todo\n- [x] done\n\n~~gone~~");
  assert.match(html, /<table>[\s\S]*<th>a<\/th>[\s\S]*<td align="center"><strong>2<\/strong><\/td>/);
  assert.match(html, /<blockquote>\s*<p>quote<\/p>\s*<blockquote>\s*<p>nested<\/p>/);
  assert.match(html, /<ul>\s*<li>one<ul>\s*<li>two<ol>\s*<li>three<\/li>/);
  assert.match(html, /<input disabled="" type="checkbox"> todo/);
  assert.match(html, /<input checked="" disabled="" type="checkbox"> done/);
  assert.match(html, /<del>gone<\/del>/);
});

test("a fenced block is highlighted for a known language and escaped otherwise", () => {
  const py = md("```python\ndef f():\n    return '<b>'\n```");
  assert.match(py, /<pre><code class="hljs language-python"><span class="hljs-keyword">def<\/span>/);
  assert.match(py, /&lt;b&gt;/);
  const plain = md("```nosuchlang\n<b>x</b>\n```");
  assert.match(plain, /<pre><code class="language-nosuchlang">&lt;b&gt;x&lt;\/b&gt;\n<\/code><\/pre>/);
  // An unclosed fence (a reply still streaming) runs to the end.
  assert.match(md("text\n```js\nlet a = 1"), /<pre><code class="hljs language-js">/);
});

test("links: only http(s) and mailto, with rel=noopener noreferrer; images become links", () => {
  assert.equal(
    md("[site](https://example.com/a?b=1&c=2)").trim(),
    '<p><a href="https://example.com/a?b=1&amp;c=2" rel="noopener noreferrer" target="_blank">site</a></p>',
  );
  assert.match(md("mail me@example.com"), /<a href="mailto:me@example.com" rel="noopener noreferrer"/);
  assert.equal(md("[x](javascript:alert(1))").trim(), "<p>x</p>");
  assert.equal(md("[x](/files/abc)").trim(), "<p>x</p>");
  assert.match(md("![cat](https://example.com/cat.png)"), /<a href="https:\/\/example.com\/cat.png"[^>]*>cat<\/a>/);
  assert.doesNotMatch(md("![cat](https://example.com/cat.png)"), /<img/);
});

test("raw HTML in a reply is shown as text, inline and as a block", () => {
  assert.equal(md("a <b>no html</b> here").trim(), "<p>a &lt;b&gt;no html&lt;/b&gt; here</p>");
  assert.equal(md("<div>\n<i>x</i>\n</div>").trim(), "<p>&lt;div&gt;<br>&lt;i&gt;x&lt;/i&gt;<br>&lt;/div&gt;</p>");
});

test("single line breaks are kept (chat replies are not prose)", () => {
  assert.equal(md("one\ntwo").trim(), "<p>one<br>two</p>");
});

test(`every payload of the XSS corpus (${corpus.length}) renders inert without a sanitiser`, () => {
  assert.ok(corpus.length >= 60);
  for (const { payload, source } of corpus) assertInert(md(payload), `${source}: ${JSON.stringify(payload)}`);
});

test("the corpus check itself catches unsafe markup", () => {
  assert.throws(() => assertInert('<img src="x">', "img"));
  assert.throws(() => assertInert('<a href="javascript:x">a</a>', "href"));
  assert.throws(() => assertInert('<p onclick="x">a</p>', "on*"));
  assert.throws(() => assertInert("<p title=x onclick=y>a</p>", "unquoted"));
});

test("safeHref keeps http(s) and mailto only", () => {
  for (const ok of ["https://a.b/c", "http://a", "mailto:x@y.z", " HTTPS://A.B "]) assert.ok(safeHref(ok), ok);
  for (const bad of ["javascript:x", "data:text/html,x", "/local", "//evil.com", "https:/x", "", null, "vbscript:x"]) {
    assert.equal(safeHref(bad), null, String(bad));
  }
});

test("without a DOM DOMPurify cannot sanitise: no rich renderer, the escaping one instead", async () => {
  assert.equal(purify.isSupported, false);
  assert.equal(createRenderer({ Marked, hljs, purify }), null);
  const loaded = await loadRenderer((p) => import(new URL(p, new URL("../", import.meta.url)).href));
  assert.equal(loaded.rich, false);
  assert.equal(loaded.render, renderLite);
});

test("a daemon that does not serve the vendored modules gets the escaping renderer", async () => {
  const loaded = await loadRenderer(async () => {
    throw new TypeError("Failed to fetch dynamically imported module");
  });
  assert.equal(loaded.rich, false);
  assert.equal(loaded.render("<b>x</b>"), "&lt;b&gt;x&lt;/b&gt;");
});

test("a working DOMPurify is used with our allow-lists and link hook", async () => {
  const calls = [];
  const hooks = [];
  const instance = {
    isSupported: true,
    addHook: (name, fn) => hooks.push(name),
    sanitize: (html, config) => {
      calls.push(config);
      return `clean:${html}`;
    },
  };
  const factory = Object.assign(() => instance, { isSupported: true, sanitize: () => "" });
  const render = createRenderer({ Marked, hljs, purify: factory });
  assert.equal(render("**a**"), "clean:<p><strong>a</strong></p>\n");
  assert.deepEqual(hooks, ["afterSanitizeAttributes"]);
  assert.deepEqual(calls[0].ALLOWED_TAGS, ALLOWED_TAGS);
  const uri = calls[0].ALLOWED_URI_REGEXP;
  for (const ok of ["https://x", "mailto:a@b", "right", "hljs language-python", "checkbox"]) assert.ok(uri.test(ok), ok);
  for (const bad of ["javascript:x", "JaVaScRiPt:x", "data:text/html,x", "vbscript:x", "tel:1"]) assert.ok(!uri.test(bad), bad);
});

test("the vendored files are the ones recorded in vendor/README.md", () => {
  const readme = readFileSync(new URL("../vendor/README.md", import.meta.url), "utf8");
  for (const file of ["marked.js", "purify.js", "highlight.js"]) {
    const sum = createHash("sha256").update(readFileSync(new URL(`../vendor/${file}`, import.meta.url))).digest("hex");
    const row = readme.split("\n").find((l) => l.startsWith(`| \`${file}\``));
    assert.ok(row && row.includes(sum), `${file}: sha256 ${sum} is not in vendor/README.md`);
  }
});
