/**
 * The page around the messages (app.js builds it over the elements of
 * index.html): sign-in, status, busy, command hints, the read-only banner,
 * the banner shown when no model is configured, the header's icons, and the
 * drawer of conversations with search, rename and delete.
 *
 * createPageView(win, els, messages, actions) returns the view chat.js
 * drives (the messages' calls plus showChat, showTokenForm, setBusy,
 * setStatus, setCommands, setMore, setReadOnly, showSetup,
 * showConversations, showResults, and the account: setAccount, confirmSwitch,
 * showAccountChanged, reload). `actions`: refreshHints(), pickCommand(c),
 * open(c), rename(id, title), remove(id), reload(). Text is only ever textContent.
 */

import { icon, setIcon } from "./icons.js";

const NARROW = "(max-width: 480px)";
export const PLACEHOLDER = { wide: "Message roost — type / for commands", narrow: "Message roost" };

export function commandItem(document, c, onPick) {
  const li = document.createElement("li");
  const usage = document.createElement("code");
  usage.textContent = c.usage;
  const summary = document.createElement("span");
  summary.textContent = c.summary;
  li.append(usage, summary);
  li.addEventListener("mousedown", (e) => {
    e.preventDefault(); // keep the focus in the input
    onPick(c);
  });
  return li;
}

function when(ts) {
  if (!ts) return "";
  try {
    return new Date(ts * 1000).toLocaleString(undefined, { dateStyle: "medium", timeStyle: "short" });
  } catch {
    return "";
  }
}

/** The header's and composer's icons; labels stay for screen readers (and narrow screens). */
export function drawIcons(win, els) {
  setIcon(els.attach, "paperclip");
  setIcon(els.mic, "mic");
  setIcon(els.theme, "theme");
  setIcon(els.drawerClose, "close");
  setIcon(els.chats, "chats", { text: "Chats" });
  setIcon(els.newChat, "plus", { text: "New chat" });
  setIcon(els.send, "send", { text: "Send" });
  setIcon(els.searchIcon, "search");
}

/** A short placeholder where the box is narrow, so it is never cut. */
export function fitPlaceholder(win, input) {
  const narrow = typeof win.matchMedia === "function" && win.matchMedia(NARROW).matches;
  input.placeholder = narrow ? PLACEHOLDER.narrow : PLACEHOLDER.wide;
}

function quietButton(document, name, label, onClick) {
  const b = document.createElement("button");
  b.type = "button";
  b.className = `quiet conversation-action ${name}`;
  b.title = label;
  b.setAttribute("aria-label", label);
  b.append(icon(document, name));
  b.addEventListener("click", (e) => {
    e.stopPropagation();
    onClick(b);
  });
  return b;
}

/** One row of the drawer: the conversation (opens it), rename, delete (press twice). */
function conversationRow(document, c, actions) {
  const li = document.createElement("li");
  li.className = "conversation-row";
  const button = document.createElement("button");
  button.type = "button";
  button.className = `conversation${c.current ? " current" : ""}`;
  const title = document.createElement("span");
  title.className = "conversation-title";
  title.textContent = c.title || "(no question yet)";
  const meta = document.createElement("small");
  meta.textContent = c.meta;
  button.append(title, meta);
  button.addEventListener("click", () => actions.open(c));
  const rename = quietButton(document, "edit", `Rename “${c.title || "this conversation"}”`, () => {
    const form = document.createElement("form");
    form.className = "rename";
    const input = document.createElement("input");
    input.value = c.title;
    input.maxLength = 120;
    input.setAttribute("aria-label", "New title");
    form.append(input);
    form.addEventListener("submit", (e) => {
      e.preventDefault();
      if (input.value.trim()) actions.rename(c.id, input.value);
    });
    input.addEventListener("keydown", (e) => {
      if (e.key === "Escape") form.replaceWith(button);
    });
    button.replaceWith(form);
    input.focus();
  });
  const remove = quietButton(document, "trash", `Delete “${c.title || "this conversation"}”`, (b) => {
    if (b.dataset.confirm === "true") return actions.remove(c.id);
    b.dataset.confirm = "true";
    b.classList.add("confirm");
    const sure = document.createElement("span");
    sure.textContent = "Delete?";
    b.append(sure);
  });
  li.append(button, rename, remove);
  return li;
}

/** A search hit: the title, and the snippet with the match marked (text only). */
function resultRow(document, r, actions) {
  const li = document.createElement("li");
  const button = document.createElement("button");
  button.type = "button";
  button.className = `conversation result${r.current ? " current" : ""}`;
  const title = document.createElement("span");
  title.className = "conversation-title";
  title.textContent = r.title || "(no question yet)";
  button.append(title);
  if (r.snippet) {
    const snip = document.createElement("small");
    snip.className = "snippet";
    if (r.match) {
      const mark = document.createElement("mark");
      mark.textContent = r.snippet.slice(r.match[0], r.match[1]);
      snip.append(r.snippet.slice(0, r.match[0]), mark, r.snippet.slice(r.match[1]));
    } else {
      snip.textContent = r.snippet;
    }
    button.append(snip);
  }
  const meta = document.createElement("small");
  meta.textContent = `${r.current ? "current · " : ""}${r.hits} match${r.hits === 1 ? "" : "es"}`;
  button.append(meta);
  button.addEventListener("click", () => actions.open({ id: r.conversation, title: r.title, current: r.current }));
  li.append(button);
  return li;
}

export function createPageView(win, els, messages, actions) {
  const { document } = win;
  let listed = [];
  let answer = null; // resolves the open "switch account?" question
  const answered = (yes) => {
    const done = answer;
    answer = null;
    els.switchView.hidden = true;
    done?.(yes);
  };
  els.switchYes.addEventListener("click", () => answered(true));
  els.switchNo.addEventListener("click", () => answered(false));
  const named = (tenant) => (tenant ? `“${tenant}”` : null);
  return {
    ...messages,
    showChat() {
      els.tokenView.hidden = true;
      els.accountNotice.hidden = true;
      els.composer.hidden = false;
      els.input.focus();
    },
    /** Who is signed in, in the header (null: not signed in, or not known). */
    setAccount(tenant) {
      els.account.textContent = tenant ? `as ${tenant}` : "";
      els.account.title = tenant ? `Signed in as ${tenant}` : "";
      els.account.hidden = !tenant;
    },
    /** A #token= link for another account: resolves to true when the person switches. */
    confirmSwitch({ from = null, to = null } = {}) {
      answered(false); // an older question is declined
      const target = named(to) ?? "another account";
      els.switchText.textContent =
        `This link signs this browser in as another account${to ? `: ${target}` : ""}. Switch?` +
        ` You are signed in as ${named(from) ?? "another account"} now; what you type next would go to ${target}.`;
      els.switchYes.textContent = to ? `Switch to ${to}` : "Switch";
      els.switchNo.textContent = from ? `Stay ${from}` : "Stay";
      const composer = els.composer.hidden;
      els.composer.hidden = true; // answer first: nothing is sent meanwhile
      els.switchView.hidden = false;
      els.switchNo.focus();
      return new Promise((resolve) => {
        answer = (yes) => {
          els.composer.hidden = composer;
          resolve(yes);
        };
      });
    },
    /** Another tab signed this browser in as someone else (or out): this tab stops. */
    showAccountChanged({ to = null, signedOut = false } = {}) {
      els.accountNoticeText.textContent = signedOut
        ? "This browser was signed out in another tab. Reload to sign in again."
        : `This browser was signed in as ${named(to) ?? "another account"} in another tab. Nothing more is sent from here; reload to continue as ${named(to) ?? "that account"}.`;
      els.accountNotice.hidden = false;
      els.composer.hidden = true;
      els.account.textContent = "";
      els.account.hidden = true;
      els.accountReload.focus();
    },
    reload() {
      actions.reload?.();
    },
    showTokenForm(message) {
      els.accountNotice.hidden = true;
      els.tokenMessage.textContent = message || "Paste the access token, or open the page's link with it: on the machine roost runs on, “roost web-token --link” prints the link (the token is in $ROOST_HOME/web-token).";
      els.tokenMessage.classList.toggle("warn", Boolean(message));
      els.tokenView.hidden = false;
      els.composer.hidden = true;
      els.tokenInput.value = "";
      els.tokenInput.focus();
    },
    setBusy(busy) {
      els.send.disabled = busy;
      els.stop.hidden = !busy;
      els.log.setAttribute("aria-busy", String(busy));
    },
    setStatus(text, tone) {
      els.status.textContent = text;
      els.status.dataset.tone = tone;
      els.status.title = text; // the whole line, should a narrow screen cut it
    },
    setCommands(list) {
      els.welcomeCommands.replaceChildren(...list.map((c) => commandItem(document, c, actions.pickCommand)));
      actions.refreshHints();
    },
    setMore(more) {
      els.earlier.hidden = !more;
    },
    setReadOnly(info) {
      els.readonly.hidden = !info;
      els.composer.hidden = Boolean(info);
      els.log.classList.toggle("reading", Boolean(info));
      if (info) els.readonlyText.textContent = `“${info.title || "An earlier conversation"}” — read-only`;
    },
    /** No model configured: say so before the first message, with what to write. */
    showSetup(setup, model = "") {
      els.setup.hidden = !setup;
      if (!setup) return;
      els.setupToml.textContent = setup.toml;
      els.setupEnv.textContent = setup.env;
      els.setupModel.textContent = model ? `Now: ${model}.` : "";
    },
    showConversations(list) {
      listed = list;
      if (els.searchInput.value.trim()) return; // search results stay until the box is emptied
      els.conversationList.replaceChildren(
        ...list.map((c) => {
          const meta = `${c.current ? "current · " : ""}${when(c.updatedAt)} · ${c.turns} turn${c.turns === 1 ? "" : "s"}`;
          return conversationRow(document, { ...c, meta }, actions);
        }),
      );
      els.drawerEmpty.textContent = "No past conversations yet.";
      els.drawerEmpty.hidden = list.length > 0;
    },
    showResults(results, q = "") {
      if (results === null) return this.showConversations(listed);
      els.conversationList.replaceChildren(...results.map((r) => resultRow(document, r, actions)));
      els.drawerEmpty.textContent = `Nothing found for “${q}”.`;
      els.drawerEmpty.hidden = results.length > 0;
    },
  };
}
