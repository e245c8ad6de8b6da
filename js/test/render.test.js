import { test } from "node:test";
import assert from "node:assert/strict";
import { escapeHtml, renderMarkdown as r } from "../render.js";

const LINK = (href, label = href) => `<a href="${href}" rel="noopener noreferrer" target="_blank">${label}</a>`;

// Every tag in the output must be one of these, with exactly these attributes.
const TAG_RE = /<(\/?)([a-zA-Z0-9]+)((?:\s[^<>]*)?)>/g;
const ALLOWED = {
  pre: /^$/,
  code: /^(?: class="lang-[A-Za-z0-9_+-]+")?$/,
  strong: /^$/,
  em: /^$/,
  br: /^$/,
  span: /^ class="h h[1-6]"$/,
  ul: /^$/,
  ol: /^$/,
  li: /^$/,
  a: /^ href="https?:\/\/[^"<>\s]+" rel="noopener noreferrer" target="_blank"$/,
};

function assertSafe(html, input) {
  const stripped = html.replace(TAG_RE, (m, close, name, attrs) => {
    const rule = ALLOWED[name.toLowerCase()];
    assert.ok(rule, `tag <${name}> from ${JSON.stringify(input)}: ${html}`);
    if (close) assert.equal(attrs, "", `attributes on a closing tag: ${html}`);
    else assert.match(attrs, rule, `attributes of <${name}> from ${JSON.stringify(input)}: ${html}`);
    return "";
  });
  // What is left is text: no markup characters may survive unescaped.
  assert.doesNotMatch(stripped, /[<>"]/, `raw markup left from ${JSON.stringify(input)}: ${html}`);
  assert.doesNotMatch(stripped, /&(?!(?:amp|lt|gt|quot|#39);)/, `stray & from ${JSON.stringify(input)}`);
  for (const m of html.matchAll(/href="([^"]*)"/g)) {
    assert.match(m[1], /^https?:\/\//i, `href must be http(s): ${m[1]}`);
  }
  assertBalanced(html, input);
}

function assertBalanced(html, input) {
  const stack = [];
  for (const m of html.matchAll(TAG_RE)) {
    const name = m[2].toLowerCase();
    if (name === "br") continue;
    if (m[1]) assert.equal(stack.pop(), name, `misnested </${name}> from ${JSON.stringify(input)}: ${html}`);
    else stack.push(name);
  }
  assert.deepEqual(stack, [], `unclosed tags from ${JSON.stringify(input)}: ${html}`);
}

test("escapeHtml escapes the five characters", () => {
  assert.equal(escapeHtml(`<a href="x" title='y'>&</a>`), "&lt;a href=&quot;x&quot; title=&#39;y&#39;&gt;&amp;&lt;/a&gt;");
});

test("plain text and line breaks", () => {
  assert.equal(r("hello"), "hello");
  assert.equal(r("a\nb\r\nc\rd"), "a<br>b<br>c<br>d");
  assert.equal(r(""), "");
  assert.equal(r(undefined), "");
});

test("bold, italics, inline code", () => {
  assert.equal(r("**b** *i* _j_ __k__"), "<strong>b</strong> <em>i</em> <em>j</em> <strong>k</strong>");
  assert.equal(r("**x *y* z**"), "<strong>x <em>y</em> z</strong>");
  assert.equal(r("use `a < b && c` here"), "use <code>a &lt; b &amp;&amp; c</code> here");
  assert.equal(r("``has ` tick``"), "<code>has ` tick</code>");
  assert.equal(r("`**not bold**`"), "<code>**not bold**</code>");
});

test("markers that are not emphasis stay as text", () => {
  assert.equal(r("snake_case_name and my_var_"), "snake_case_name and my_var_");
  assert.equal(r("2*3*4 = 24"), "2*3*4 = 24");
  assert.equal(r("a * b * c"), "a * b * c");
  assert.equal(r("**unclosed"), "**unclosed");
  assert.equal(r("* list item"), "<ul><li>list item</li></ul>"); // a list, not emphasis
});

test("fenced code blocks keep their text verbatim", () => {
  assert.equal(
    r("before\n```python\nif a < b:\n    print(\"**x**\")\n```\nafter"),
    'before<pre><code class="lang-python">if a &lt; b:\n    print(&quot;**x**&quot;)</code></pre>after',
  );
  assert.equal(r("```\n```"), "<pre><code></code></pre>");
  assert.equal(r("```\n_x_ https://a.example\n```"), "<pre><code>_x_ https://a.example</code></pre>");
  // The language is reduced to safe characters.
  assert.equal(r('```c#"><script>\nx\n```'), '<pre><code class="lang-c">x</code></pre>');
});

test("an unclosed fence runs to the end (a reply still streaming)", () => {
  assert.equal(r("text\n```js\nlet a = 1;\nlet b"), 'text<pre><code class="lang-js">let a = 1;\nlet b</code></pre>');
});

test("two code blocks", () => {
  assert.equal(r("```\na\n```\nmid\n```\nb\n```"), "<pre><code>a</code></pre>mid<pre><code>b</code></pre>");
});

test("links: markdown and bare, http(s) only, with rel=noopener", () => {
  assert.equal(r("[docs](https://example.com/a?b=1&c=2)"), LINK("https://example.com/a?b=1&amp;c=2", "docs"));
  assert.equal(r("see http://example.com."), `see ${LINK("http://example.com")}.`);
  assert.equal(r("(https://example.com/x)"), `(${LINK("https://example.com/x")})`);
  assert.equal(r('"https://example.com/q"'), `&quot;${LINK("https://example.com/q")}&quot;`);
  assert.equal(r("**https://example.com**"), `<strong>${LINK("https://example.com")}</strong>`);
  assert.equal(r("[`code`](https://x.example)"), LINK("https://x.example", "<code>code</code>"));
  assert.equal(r("https://"), "https://");
});

test("headings", () => {
  assert.equal(r("# Title\ntext"), '<span class="h h1">Title</span><br>text');
  assert.equal(r("### A *b* ###"), '<span class="h h3">A <em>b</em></span>');
  assert.equal(r("#hashtag"), "#hashtag");
});

const XSS = [
  "<img src=x onerror=alert(1)>",
  "<script>alert(1)</script>",
  "<a href=\"javascript:alert(1)\">x</a>",
  "[click](javascript:alert(1))",
  "[click](JaVaScRiPt:alert(1))",
  "[click](data:text/html;base64,PHNjcmlwdD4=)",
  "[click](vbscript:msgbox)",
  "[x](https://a.example\" onmouseover=\"alert(1))",
  "[x](https://a.example/\"><img src=x onerror=alert(1)>)",
  "https://a.example/\"onmouseover=alert(1)//",
  "https://a.example/'onmouseover=alert(1)//",
  "[&#106;avascript:alert(1)](&#106;avascript:alert(1))",
  "[x](&#x68;ttps://evil)",
  "```\"><script>alert(1)</script>\n<b>x</b>\n```",
  "```js onload=alert(1)\nx\n```",
  "`<svg/onload=alert(1)>`",
  "**<iframe src=//evil>**",
  "_<style>body{display:none}</style>_",
  "# <h1 onclick=x>",
  "\u0000 0 \u0000 \u00000\u0000 <b>",
  "<<script>script>alert(1)<</script>/script>",
  "&lt;script&gt; stays text",
  "[a](https://ok.example)<img src=x>",
  "<!-- comment --> <![CDATA[ x ]]>",
];

test("XSS attempts come out as inert text", () => {
  for (const input of XSS) assertSafe(r(input), input);
  assert.equal(r("<img src=x onerror=alert(1)>"), "&lt;img src=x onerror=alert(1)&gt;");
  assert.equal(r("[click](javascript:alert(1))"), "[click](javascript:alert(1))");
  assert.equal(r("&lt;script&gt;"), "&amp;lt;script&amp;gt;");
  // An entity-encoded scheme is not decoded into a link.
  assert.doesNotMatch(r("[x](&#x68;ttps://evil)"), /<a /);
  // NUL characters cannot forge a placeholder.
  assert.equal(r("\u00000\u0000"), "0");
});

test("fuzz: random mixes of markup characters stay safe and well nested", () => {
  // A fixed-seed generator so a failure can be reproduced.
  let seed = 0x2545f491;
  const rand = (n) => {
    seed ^= seed << 13;
    seed ^= seed >>> 17;
    seed ^= seed << 5;
    return (seed >>> 0) % n;
  };
  const atoms = [
    "<", ">", "\"", "'", "&", "*", "**", "_", "__", "`", "```", "```js", "\n", "\r\n", " ", "#", "# ",
    "[", "]", "(", ")", "https://", "http://a.example/", "javascript:", "a", "b c", "<img src=x onerror=y>",
    "&amp;", "&#39;", "\u0000", "1", "é", "🎉",
  ];
  for (let i = 0; i < 3000; i++) {
    const len = 1 + rand(24);
    let s = "";
    for (let j = 0; j < len; j++) s += atoms[rand(atoms.length)];
    assertSafe(r(s), s);
  }
});

test("rendering a long reply is not quadratic in practice", () => {
  const text = "word **bold** `code` https://example.com/x _it_\n".repeat(5000);
  const html = r(text);
  assert.equal(html.split("<strong>").length - 1, 5000);
});

test("bullet and numbered lists", () => {
  assert.equal(r("- a\n- **b**\n* c"), "<ul><li>a</li><li><strong>b</strong></li><li>c</li></ul>");
  assert.equal(r("Steps:\n1. one\n2. two\n\nDone."), "Steps:<br><ol><li>one</li><li>two</li></ol><br>Done.");
  assert.equal(r("- x\n1. y"), "<ul><li>x</li></ul><ol><li>y</li></ol>");
  assert.equal(r("-not a list\n*emph*"), "-not a list<br><em>emph</em>");
  assert.equal(r("- <img src=x onerror=alert(1)>"), "<ul><li>&lt;img src=x onerror=alert(1)&gt;</li></ul>");
});
