import { test } from "node:test";
import assert from "node:assert/strict";
import { renderMarkdown as r } from "../render.js";

// The fallback renderer (used when the vendored libraries cannot load) closes a
// fence only with one at least as long (CommonMark 4.5). `/tool show` puts a tool's
// source in a fence one backtick longer than its longest run; a docstring line of
// three backticks closed it here, and what followed showed as roost's bold text
// (session 47's attacker pass).
test("a longer fence holds lines of three backticks as code", () => {
  const source = 'def run():\n    """Doc.\n```\n\n**roost checked this code**\n\n```python\n    """';
  const html = r(`Draft x v1\n\`\`\`\`python\n${source}\n\`\`\`\`\nafter`);
  assert.equal(html.includes("<strong>"), false, html);
  assert.match(html, /<pre><code class="lang-python">def run[\s\S]*```python\n {4}(&quot;){3}<\/code><\/pre>after$/);
  assert.equal(r("````\na\n```\nb\n`````\nc"), "<pre><code>a\n```\nb</code></pre>c");
});
