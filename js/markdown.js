/**
 * Rich Markdown for the chat page: marked (CommonMark + GFM tables, task
 * lists, strikethrough) renders, highlight.js colours code blocks, and
 * DOMPurify sanitises the HTML before it reaches innerHTML.
 *
 * The libraries are vendored in js/vendor/ (see its README) and passed in,
 * so this module has no DOM and no I/O of its own:
 *   createMarked({Marked, hljs}) -> (text) => html   the renderer alone:
 *       raw HTML in a reply is shown as text, links only http(s)/mailto
 *       (rel="noopener noreferrer", new tab), images become plain links
 *   createRenderer({Marked, hljs, purify}) -> (text) => html | null
 *       the renderer + DOMPurify with an allow-list of tags and attributes;
 *       null when DOMPurify cannot work here (no DOM, as in node)
 *   loadRenderer(importer) -> Promise<(text) => html>
 *       imports the vendored modules; when that fails (a daemon that does
 *       not serve js/vendor/), the escaping renderer of render.js is used.
 * Two layers on purpose: the renderer never emits raw HTML or unsafe links,
 * and DOMPurify removes whatever a renderer bug might let through.
 */

import { escapeHtml, renderMarkdown as renderLite } from "./render.js";

export const ALLOWED_TAGS = [
  "p", "br", "hr", "strong", "em", "del", "s", "code", "pre", "a", "ul", "ol", "li",
  "blockquote", "table", "thead", "tbody", "tr", "th", "td", "h1", "h2", "h3", "h4", "h5",
  "h6", "span", "input",
];
export const ALLOWED_ATTR = ["href", "title", "class", "align", "type", "checked", "disabled", "start"];
const SAFE_URL_RE = /^(?:https?:\/\/[^\s/?#]|mailto:[^\s])/i;

/** The href when it is http(s) or mailto, else null. */
export function safeHref(href) {
  if (typeof href !== "string") return null;
  const url = href.trim();
  return SAFE_URL_RE.test(url) ? url : null;
}

function anchor(href, title, label) {
  const t = title ? ` title="${escapeHtml(title)}"` : "";
  return `<a href="${escapeHtml(href)}"${t} rel="noopener noreferrer" target="_blank">${label}</a>`;
}

function highlighted(hljs, text, lang) {
  const name = typeof lang === "string" ? lang.trim().split(/\s+/)[0].toLowerCase() : "";
  if (hljs && name && hljs.getLanguage(name)) {
    try {
      const html = hljs.highlight(text, { language: name, ignoreIllegals: true }).value;
      return { html, cls: `hljs language-${name.replace(/[^a-z0-9_+-]/g, "")}` };
    } catch {
      // fall through to plain text
    }
  }
  return { html: escapeHtml(text), cls: name ? `language-${name.replace(/[^a-z0-9_+-]/g, "")}` : "" };
}

/** marked configured for chat replies (no sanitiser: see createRenderer). */
export function createMarked({ Marked, hljs = null }) {
  const marked = new Marked({
    gfm: true,
    breaks: true,
    async: false,
    renderer: {
      html: ({ text, block }) =>
        block ? `<p>${escapeHtml(text.trim()).replace(/\n/g, "<br>")}</p>\n` : escapeHtml(text),
      link({ href, title, tokens }) {
        const label = this.parser.parseInline(tokens);
        const url = safeHref(href);
        return url ? anchor(url, title, label) : label;
      },
      image({ href, title, text }) {
        // Never loaded (privacy, and the CSP forbids other hosts): a link instead.
        const url = safeHref(href);
        const label = escapeHtml(text || href || "image");
        return url ? anchor(url, title, label) : label;
      },
      code({ text, lang }) {
        const { html, cls } = highlighted(hljs, text.replace(/\n$/, ""), lang);
        return `<pre><code${cls ? ` class="${cls}"` : ""}>${html}\n</code></pre>\n`;
      },
    },
  });
  return (text) => marked.parse(String(text ?? "").replace(/\u0000/g, ""));
}

/** marked + DOMPurify. `purify` is DOMPurify's export (a factory bound to the window). */
export function createRenderer({ Marked, hljs = null, purify }) {
  if (!purify || !purify.isSupported || typeof purify.sanitize !== "function") return null;
  const toHtml = createMarked({ Marked, hljs });
  const dp = typeof purify === "function" && purify.isSupported ? purify() : purify; // own instance: our hooks stay ours
  const config = {
    ALLOWED_TAGS,
    ALLOWED_ATTR,
    // DOMPurify checks every attribute value against this: no scheme but
    // http(s)/mailto, plain values (align="right", class names) pass.
    ALLOWED_URI_REGEXP: /^(?:(?:https?|mailto):|[^a-z]|[a-z+.-]+(?:[^a-z+.\-:]|$))/i,
    ALLOW_DATA_ATTR: false,
    ALLOW_ARIA_ATTR: false,
  };
  dp.addHook("afterSanitizeAttributes", (node) => {
    if (node.nodeName === "A" && node.hasAttribute("href")) {
      if (!safeHref(node.getAttribute("href"))) node.removeAttribute("href");
      node.setAttribute("rel", "noopener noreferrer");
      node.setAttribute("target", "_blank");
    } else if (node.nodeName === "INPUT") {
      node.setAttribute("type", "checkbox");
      node.setAttribute("disabled", "");
    }
  });
  return (text) => dp.sanitize(toHtml(text), config);
}

const VENDOR = ["./vendor/marked.js", "./vendor/highlight.js", "./vendor/purify.js"];

/**
 * The page's renderer: rich when the vendored modules load and DOMPurify
 * works, else the escaping one from render.js (never raw HTML either way).
 * @param {(path: string) => Promise<any>} importer  e.g. (p) => import(p)
 */
export async function loadRenderer(importer) {
  try {
    const [markedMod, hljsMod, purifyMod] = await Promise.all(VENDOR.map((p) => importer(p)));
    const rich = createRenderer({ Marked: markedMod.Marked, hljs: hljsMod.default, purify: purifyMod.default });
    if (rich) return { render: rich, rich: true };
  } catch {
    // an old daemon without /static/vendor/: keep the escaping renderer
  }
  return { render: renderLite, rich: false };
}
