/**
 * Parts of a message the view draws around its text (view.js): the head of a
 * code block (its language and a Copy button), the row of buttons under a
 * message (Edit, another answer, the arrows between versions) and the form
 * that edits a sent message. DOM builders only; text is always textContent.
 *
 *   codeLanguage(code)          -> "Python" | "text" | …  (from the renderer's class)
 *   decorateCode(win, body)     a head on every <pre> of `body`
 *   messageTools(document, msg, actions) -> <div class="msg-tools"> (maybe empty)
 *   editForm(document, msg, {save, cancel}) -> <form class="edit">
 */

import { icon, setIcon } from "./icons.js";

const COPIED_MS = 1500;
const NAMES = {
  bash: "Bash", c: "C", "c++": "C++", cpp: "C++", cs: "C#", csharp: "C#", css: "CSS", diff: "Diff",
  go: "Go", html: "HTML", java: "Java", javascript: "JavaScript", js: "JavaScript", json: "JSON",
  kotlin: "Kotlin", lua: "Lua", markdown: "Markdown", md: "Markdown", php: "PHP", plaintext: "text",
  py: "Python", python: "Python", rb: "Ruby", ruby: "Ruby", rs: "Rust", rust: "Rust", sh: "Shell",
  shell: "Shell", sql: "SQL", swift: "Swift", text: "text", toml: "TOML", ts: "TypeScript",
  tsx: "TSX", jsx: "JSX", txt: "text", typescript: "TypeScript", xml: "XML", yaml: "YAML", yml: "YAML",
  zsh: "Zsh", dockerfile: "Dockerfile", ini: "INI", r: "R", scala: "Scala", haskell: "Haskell",
};

/** The language a code block names (the rich renderer's `language-x`, the plain one's `lang-x`). */
export function codeLanguage(code) {
  const m = /(?:^|\s)(?:language|lang)-([a-z0-9_+#.-]{1,30})(?:\s|$)/i.exec(code?.className || "");
  if (!m) return "text";
  const name = m[1].toLowerCase();
  return NAMES[name] ?? name;
}

async function copyText(win, text) {
  try {
    await win.navigator.clipboard.writeText(text);
    return true;
  } catch {
    return false;
  }
}

/** Give each code block of `body` a head: its language and a Copy button. */
export function decorateCode(win, body) {
  if (typeof body.querySelectorAll !== "function") return;
  const { document } = win;
  for (const pre of body.querySelectorAll("pre")) {
    const code = pre.querySelector("code");
    const head = document.createElement("div");
    head.className = "code-head";
    const lang = document.createElement("span");
    lang.className = "code-lang";
    lang.textContent = codeLanguage(code);
    const button = document.createElement("button");
    button.type = "button";
    button.className = "copy";
    button.textContent = "Copy";
    button.setAttribute("aria-label", `Copy the ${lang.textContent} code`);
    button.addEventListener("click", async () => {
      const ok = await copyText(win, code?.textContent ?? pre.textContent);
      button.textContent = ok ? "Copied" : "Select and copy";
      win.setTimeout(() => (button.textContent = "Copy"), COPIED_MS);
    });
    head.append(lang, button);
    pre.prepend(head);
  }
}

function toolButton(document, name, label, onClick) {
  const b = document.createElement("button");
  b.type = "button";
  b.className = `quiet tool-button ${name}`;
  b.title = label;
  b.setAttribute("aria-label", label);
  setIcon(b, name);
  b.addEventListener("click", onClick);
  return b;
}

/** "‹ 2 / 3 ›": the versions of a turn; a press shows the one before or after. */
function versionArrows(document, msg, pick) {
  const { index, count } = msg.versions;
  const box = document.createElement("span");
  box.className = "versions";
  const prev = toolButton(document, "left", "Previous version", () => pick(msg.id, index - 1));
  const next = toolButton(document, "right", "Next version", () => pick(msg.id, index + 1));
  prev.disabled = index <= 0;
  next.disabled = index >= count - 1;
  const where = document.createElement("span");
  where.className = "version-of";
  where.textContent = `${index + 1} / ${count}`;
  box.append(prev, where, next);
  return box;
}

/** Whether a message has a place in the daemon's history that edit and regenerate can use. */
const onDaemon = (msg) => Number.isInteger(msg.seq) && msg.kind !== "summary" && msg.kind !== "proactive";

/** The row under a message: Edit (the person's), another answer (an answer's), versions. */
export function messageTools(document, msg, actions) {
  const row = document.createElement("div");
  row.className = "msg-tools";
  const settled = msg.status === "done" || msg.status === "stopped";
  if (onDaemon(msg) && settled && msg.role === "user" && actions.edit) {
    row.append(toolButton(document, "edit", "Edit this message", () => actions.startEdit(msg.id)));
  }
  if (onDaemon(msg) && settled && msg.role === "assistant" && actions.regenerate && msg.kind !== "command") {
    row.append(toolButton(document, "regenerate", "Another answer", () => actions.regenerate(msg.id)));
  }
  if (msg.versions && actions.version) row.append(versionArrows(document, msg, actions.version));
  row.hidden = row.children.length === 0;
  return row;
}

/** Edit a sent message in place: the text in a box, Send (a new version) or Cancel. */
export function editForm(document, msg, { save, cancel }) {
  const form = document.createElement("form");
  form.className = "edit";
  const box = document.createElement("textarea");
  box.value = msg.text;
  box.rows = Math.min(8, Math.max(2, msg.text.split("\n").length));
  box.setAttribute("aria-label", "Edit your message");
  const row = document.createElement("div");
  row.className = "row edit-buttons";
  const send = document.createElement("button");
  send.type = "submit";
  send.append(icon(document, "right"));
  const label = document.createElement("span");
  label.textContent = "Send";
  send.append(label);
  const stop = document.createElement("button");
  stop.type = "button";
  stop.className = "quiet";
  stop.textContent = "Cancel";
  stop.addEventListener("click", () => cancel());
  row.append(stop, send);
  form.append(box, row);
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    save(box.value);
  });
  box.addEventListener("keydown", (e) => {
    if (e.key === "Escape") cancel();
    else if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      save(box.value);
    }
  });
  return form;
}
