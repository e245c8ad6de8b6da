/**
 * Markdown-lite to an HTML string, safe to assign to innerHTML.
 *
 * Pure: no DOM. The whole reply is HTML-escaped first; formatting is then
 * recognised on the escaped text, so no character of the reply can ever
 * become markup. The only tags produced are: pre, code, strong, em, a, br,
 * ul, ol, li and span (for headings); the only attributes are class on code/span and
 * href/rel/target on a. Links are made only for http(s) URLs.
 *
 * Supported: ```lang fenced code blocks (closed only by a fence at least as
 * long; an unclosed fence runs to the end, which keeps a streaming reply stable), `inline code`, **bold**, __bold__,
 * *italics*, _italics_, [text](https://...), bare https://... URLs,
 * "# heading" lines, "- item" / "1. item" lists, and line breaks.
 */

const ESC = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };

/** Escape the five HTML-significant characters. */
export function escapeHtml(text) {
  return String(text).replace(/[&<>"']/g, (c) => ESC[c]);
}

// Placeholders: NUL-delimited indices. NUL is stripped from input first, so
// a reply can never forge one.
const PH = "\u0000";
const PH_RE = /\u0000(\d+)\u0000/g;

// A URL inside escaped text: any non-space, non-entity characters plus
// "&amp;" (a real "&"). Other entities stand for < > " ' and end the URL.
const URL_BODY = "(?:[^\\s&\\u0000<>\"'()\\[\\]]|&amp;)+";
const LINK_RE = new RegExp(`\\[([^\\]\\n]+)\\]\\((https?://${URL_BODY})\\)`, "gi");
const BARE_URL_RE = new RegExp(`\\bhttps?://${URL_BODY}`, "gi");
const TRAILING_PUNCT_RE = /[.,;:!?*_~]+$/;

// Opening fence on its own line (three backticks or more, plus an optional
// language), the body, then a closing fence at least as long on its own line, or
// the end of the text (CommonMark 4.5: a tool's source shown in a longer fence
// keeps its own ``` lines as code, session 47).
const FENCE_RE =
  /(?:^|\n)[ \t]*(```+)[ \t]*([A-Za-z0-9_+.#-]*)[^\n]*(?:\n|$)([\s\S]*?)(?:(?:\n|(?<=\n))[ \t]*\1`*[ \t]*(?:\n|$)|$)/g;

/** Render `text` (a reply, possibly partial while streaming) to HTML. */
export function renderMarkdown(text) {
  const stash = [];
  const keep = (html) => `${PH}${stash.push(html) - 1}${PH}`;

  let s = escapeHtml(String(text ?? "").replace(/\u0000/g, "").replace(/\r\n?/g, "\n"));

  // 1. Fenced code blocks: contents kept verbatim (already escaped).
  // The newlines around a block are consumed: <pre> breaks lines itself.
  s = s.replace(FENCE_RE, (_m, _fence, lang, body) => {
    const safe = lang.replace(/[^A-Za-z0-9_+-]/g, "");
    const cls = safe ? ` class="lang-${safe}"` : "";
    return keep(`<pre><code${cls}>${body}</code></pre>`);
  });

  // 2. Inline code (single or double backticks), never across lines.
  s = s.replace(/``([^\n]+?)``|`([^`\n]+)`/g, (_m, a, b) => keep(`<code>${a ?? b}</code>`));

  // 3. Links with text, then bare URLs.
  s = s.replace(LINK_RE, (_m, label, url) => keep(anchor(url, label)));
  s = s.replace(BARE_URL_RE, (url) => {
    const tail = url.match(TRAILING_PUNCT_RE);
    const core = tail ? url.slice(0, -tail[0].length) : url;
    if (!/^https?:\/\/[^/?#]/i.test(core)) return url;
    return keep(anchor(core, core)) + (tail ? tail[0] : "");
  });

  // 4. Headings: a whole line starting with 1-6 "#" and a space.
  s = s.replace(/(^|\n)(#{1,6}) +([^\n]+?)[ #]*(?=\n|$)/g, (_m, lead, hashes, body) =>
    `${lead}<span class="h h${hashes.length}">${inline(body)}</span>`,
  );

  // 5. Emphasis on what is left, line by line (placeholders are opaque).
  s = s
    .split("\n")
    .map((line) => (line.startsWith("<span class=\"h") ? line : inline(line)))
    .join("\n");

  // 6. Lists: runs of "- item" / "* item" / "+ item" or "1. item" lines
  // become one <ul>/<ol>; the line break after a list is absorbed by it.
  s = lists(s, keep);

  // 7. Line breaks.
  s = s.replace(/\n/g, "<br>").replace(/\u0001(<br>)?/g, "");

  // Restore stashed pieces; a link label may hold an inline-code piece.
  const restore = (t) => t.replace(PH_RE, (_m, i) => restore(stash[Number(i)]));
  return restore(s);
}

const ITEM_RE = /^[ \t]{0,3}(?:([-*+])|(\d{1,3})[.)])[ \t]+(\S.*)$/;

/** Group list lines (already escaped and formatted) into stashed <ul>/<ol> blocks. */
function lists(s, keep) {
  const out = [];
  let kind = null;
  let items = [];
  const flush = () => {
    if (kind) out.push(`${keep(`<${kind}>${items.map((i) => `<li>${i}</li>`).join("")}</${kind}>`)}\u0001`);
    kind = null;
    items = [];
  };
  for (const line of s.split("\n")) {
    const m = line.match(ITEM_RE);
    if (!m) {
      flush();
      out.push(line);
      continue;
    }
    const k = m[1] ? "ul" : "ol";
    if (kind !== k) flush();
    kind = k;
    items.push(m[3]);
  }
  flush();
  return out.join("\n");
}

function anchor(url, label) {
  return `<a href="${url}" rel="noopener noreferrer" target="_blank">${label}</a>`;
}

/**
 * Bold and italics within one line of escaped text. Bold runs first on text
 * without tags; italics never span a "<", so tags always nest properly. No
 * body spans its own marker, which keeps every pattern linear in the line.
 */
function inline(line) {
  return line
    .replace(/\*\*(?=[^\s*])((?:[^*\n<]|\*(?!\*))*?[^\s*<])\*\*/g, "<strong>$1</strong>")
    .replace(/(^|[^\w])__(?=[^\s_])((?:[^_\n<]|_(?!_))*?[^\s_<])__(?!\w)/g, "$1<strong>$2</strong>")
    .replace(/(^|[^\w*])\*(?=[^\s*])([^*\n<]*?[^\s*<])\*(?![\w*])/g, "$1<em>$2</em>")
    .replace(/(^|[^\w])_(?=[^\s_])([^_\n<]*?[^\s_<])_(?!\w)/g, "$1<em>$2</em>");
}
