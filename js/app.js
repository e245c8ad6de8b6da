/**
 * DOM glue of the chat page: builds the view that chat.js drives and wires
 * the page's events to it. The behaviour lives in the pure modules; this file
 * and view.js only read and write the elements of index.html.
 *
 * startPage(win, {importer}) runs the page in a window (the real one when
 * loaded by the browser; a small fake one in the node tests). `importer`
 * loads the vendored Markdown modules (default: dynamic import()).
 */

import { createApi } from "./api.js";
import { createAttachments, createUploader, wireAttach } from "./attach.js";
import { CHAT_RULE, chatFromSearch, createChat, createWhoami, suggestChatName } from "./chat.js";
import { loadRenderer } from "./markdown.js";
import { renderMarkdown } from "./render.js";
import { TOKEN_KEY, createTokenStore, createTranscriptStore, tokenFromHash } from "./storage.js";
import { createThemeStore, nextTheme, themeLabel } from "./theme.js";
import { commandItem, createPageView, drawIcons, fitPlaceholder } from "./page_view.js";
import { wireRecord } from "./record.js";
import { sentFiles } from "./attach.js";
import { createMessagesView } from "./view.js";

const ELEMENT_IDS = [
  "log", "messages", "welcome", "welcome-commands", "earlier", "status", "chats", "new-chat", "theme", "drawer",
  "drawer-close", "drawer-empty", "conversation-list", "readonly", "readonly-text", "back", "token-view",
  "token-form", "token-input", "token-message", "composer", "hints", "send-form", "input", "send", "stop", "examples",
  "chips", "attach", "file-input", "mic", "setup", "setup-toml", "setup-env", "setup-model", "search-input",
  "search-icon", "account", "switch-view", "switch-text", "switch-yes", "switch-no", "account-notice",
  "account-notice-text", "account-reload", "chat-refused", "chat-refused-text", "chat-refused-rule", "chat-suggest",
  "chat-default",
];

function elements(document) {
  const els = {};
  for (const id of ELEMENT_IDS) {
    const el = document.getElementById(id);
    if (!el) throw new Error(`index.html lacks #${id}`);
    els[id.replace(/-([a-z])/g, (_m, c) => c.toUpperCase())] = el;
  }
  return els;
}

function autosize(win, input) {
  input.style.height = "auto";
  input.style.height = `${Math.min(input.scrollHeight, Math.round(win.innerHeight * 0.4))}px`;
}

function applyTheme(win, els, theme) {
  const root = win.document.documentElement;
  if (theme === "system") delete root.dataset.theme;
  else root.dataset.theme = theme;
  els.theme.title = themeLabel(theme);
  els.theme.setAttribute("aria-label", themeLabel(theme));
}

/** Take `#token=…` out of the address bar; returns the token or null. */
function takeHashToken(win) {
  const { location, history } = win;
  const { token, rest } = tokenFromHash(location.hash);
  if (token !== null || /(^#|&)token=/.test(location.hash)) {
    history.replaceState(null, "", location.pathname + location.search + rest);
  }
  return token;
}

/**
 * Start the chat page in `win`. Returns {chat, ready, rendererReady} (for tests).
 * @param {Window} win
 */
export function startPage(win, { importer = (path) => import(path) } = {}) {
  const { document } = win;
  const els = elements(document);
  const hashToken = takeHashToken(win); // before anything else
  const themes = createThemeStore(win.localStorage);
  applyTheme(win, els, themes.get());

  const tokens = createTokenStore(win.localStorage);
  const { id: chatId, asked } = chatFromSearch(win.location.search);
  if (chatId === null) return refuseChat(win, els, asked, { tokens, hashToken });
  let chat = null;
  // the token this tab signed in with (chat.js keeps it), not whatever localStorage holds now:
  // another tab (or a #token= link) changing the stored one does not switch this tab's account
  const getToken = () => chat?.token ?? null;
  const api = createApi({ fetch: (url, init) => win.fetch(url, init), getToken });

  function refreshHints() {
    const list = chat ? chat.hints(els.input.value) : [];
    const pick = (c) => {
      els.input.value = `/${c.name} `;
      refreshHints();
      els.input.focus();
    };
    els.hints.replaceChildren(...list.map((c) => commandItem(document, c, pick)));
    for (const li of els.hints.children) li.setAttribute("role", "option");
    els.hints.hidden = list.length === 0;
  }

  drawIcons(win, els);
  fitPlaceholder(win, els.input);
  win.matchMedia?.("(max-width: 480px)")?.addEventListener?.("change", () => fitPlaceholder(win, els.input));
  const messages = createMessagesView(win, els, {
    retry: (id) => chat.retry(id),
    send: (command) => chat.send(command),
    render: renderMarkdown,
    edit: (id, text) => chat.edit(id, text),
    regenerate: (id) => chat.regenerate(id),
    version: (id, index) => chat.switchVersion(id, index),
    thumb: (msg, index) => chat.thumbnail(msg, index),
  });
  const view = createPageView(win, els, messages, {
    refreshHints,
    pickCommand: (c) => {
      els.input.value = `/${c.name} `;
      refreshHints();
      els.input.focus();
    },
    open: (c) => {
      els.drawer.hidden = true;
      els.chats.setAttribute("aria-expanded", "false");
      chat.openConversation(c.id, c.title);
    },
    rename: (id, title) => chat.renameConversation(id, title),
    remove: (id) => chat.deleteConversation(id),
    reload: () => win.location.reload?.(),
  });
  chat = createChat({
    api,
    view,
    tokens,
    whoami: createWhoami((url, init) => win.fetch(url, init), chatId),
    transcript: createTranscriptStore(win.sessionStorage),
    chatId,
  });

  const files = wireFiles(win, els, getToken, view);

  async function sendText(text) {
    if ((!text.trim() && !files.list.items.length) || chat.busy || files.uploading) return;
    const attachments = await files.upload();
    if (attachments === null) return; // the reason is in the status line; text and chips stay
    els.input.value = "";
    autosize(win, els.input);
    refreshHints();
    const sent = await chat.send(text, attachments);
    if (sent) files.list.clear();
    else if (!els.input.value) els.input.value = text; // give it back
    autosize(win, els.input);
  }

  wireComposer(win, els, chat, { sendText, refreshHints });
  wireHeader(win, els, chat, themes);
  wireTokens(win, els, chat);
  els.examples.addEventListener("click", (e) => {
    const button = e.target?.closest?.("button.example");
    if (button) sendText(button.textContent.trim());
  });

  const rendererReady = loadRenderer(importer).then(({ render, rich }) => {
    messages.setRenderer(render);
    document.documentElement.dataset.renderer = rich ? "rich" : "plain";
  });
  const ready = chat.start({ hashToken });
  return { chat, ready, rendererReady };
}

/**
 * ?chat= names a chat the daemon would refuse (`asked`: "Einkäufe", "my list"):
 * no chat is opened (not the default one in its place, where the person's
 * messages would land unseen), the page says why, names the rule and offers a
 * valid name close to it and the default chat. A #token= link's token (already
 * out of the address bar) is stored when none is, as a first open does, so
 * that fixing the name by hand keeps the person signed in; one that differs
 * from the stored token goes along with the buttons (the next page asks
 * before switching account), never into the page's HTML.
 */
function refuseChat(win, els, asked, { tokens, hashToken }) {
  const { location } = win;
  if (hashToken && !tokens.get()) tokens.set(hashToken);
  const carried = hashToken && hashToken !== tokens.get() ? `#token=${encodeURIComponent(hashToken)}` : "";
  const go = (name) => location.assign(`${location.pathname}${name ? `?chat=${name}` : ""}${carried}`);
  const chars = Array.from(asked);
  const named = chars.length > 80 ? `${chars.slice(0, 79).join("")}…` : asked;
  els.chatRefusedText.textContent = `The address names the chat “${named}”, which roost cannot open. No chat was opened: nothing can be sent from this page until the name is changed.`;
  els.chatRefusedRule.textContent = `${CHAT_RULE} Change ?chat= in the address, or:`;
  const suggested = suggestChatName(asked);
  els.chatSuggest.hidden = suggested === null;
  if (suggested !== null) {
    els.chatSuggest.textContent = `Open the chat “${suggested}”`;
    els.chatSuggest.addEventListener("click", () => go(suggested));
  }
  els.chatDefault.addEventListener("click", () => go(null));
  els.chatRefused.hidden = false;
  drawIcons(win, els);
  for (const button of [els.chats, els.newChat]) button.disabled = true;
  els.status.textContent = "No chat open: the chat name in the address is not allowed";
  els.status.dataset.tone = "error";
  els.status.title = els.status.textContent;
  els.welcome.hidden = true;
  return { chat: null, ready: Promise.resolve(), rendererReady: Promise.resolve() };
}

/** Attached, pasted, dropped and recorded files (attach.js, record.js) and their upload. */
function wireFiles(win, els, getToken, view) {
  let draw = () => {};
  const list = createAttachments({ onChange: (items) => draw(items) });
  const refused = (why) => view.setStatus(`Not attached: ${why}`, "error");
  draw = wireAttach(win, els, list, { onRefused: refused });
  wireRecord(win, els, {
    onRecorded: (blob, { name }) => {
      const r = list.add(blob, { name, voice: true });
      if (!r.ok) refused(r.reason);
    },
    onError: (why) => view.setStatus(`Not recorded: ${why}`, "error"),
  });
  const uploader = createUploader({ fetch: (url, init) => win.fetch(url, init), getToken });
  const files = {
    list,
    uploading: false,
    /** The chips as {ids, sent} for chat.send, or null when an upload failed. */
    async upload() {
      const items = list.items;
      if (!items.length) return { ids: [], sent: [] };
      files.uploading = true;
      els.send.disabled = true;
      try {
        const ids = await uploader.uploadAll(items, {
          onEach: (item, i) => view.setStatus(`Uploading ${item.name} (${i + 1} of ${items.length})…`, "busy"),
        });
        return { ids, sent: sentFiles(items) };
      } catch (err) {
        view.setStatus(`Not sent: ${err.message}`, "error");
        return null;
      } finally {
        files.uploading = false;
        els.send.disabled = false;
      }
    },
  };
  return files;
}

function wireComposer(win, els, chat, { sendText, refreshHints }) {
  els.sendForm.addEventListener("submit", (e) => {
    e.preventDefault();
    sendText(els.input.value);
  });
  els.input.addEventListener("keydown", (e) => {
    if (e.isComposing || e.keyCode === 229) return; // an IME is composing
    if (e.key === "Enter" && !e.shiftKey && !e.altKey && !e.ctrlKey && !e.metaKey) {
      e.preventDefault();
      sendText(els.input.value);
    } else if (e.key === "Tab" && !e.shiftKey && !els.hints.hidden) {
      const done = chat.complete(els.input.value);
      if (done !== null) {
        e.preventDefault();
        els.input.value = done;
        refreshHints();
      }
    } else if (e.key === "Escape") {
      if (!els.hints.hidden) els.hints.hidden = true;
      else if (chat.busy) chat.stop();
    }
  });
  els.input.addEventListener("input", () => {
    autosize(win, els.input);
    refreshHints();
  });
  els.stop.addEventListener("click", () => chat.stop());
}

function wireHeader(win, els, chat, themes) {
  els.newChat.addEventListener("click", async () => {
    if (await chat.newChat()) els.input.focus();
  });
  els.chats.addEventListener("click", () => {
    const open = els.drawer.hidden;
    els.drawer.hidden = !open;
    els.chats.setAttribute("aria-expanded", String(open));
    if (open) chat.conversations();
  });
  let searching = 0;
  els.searchInput.addEventListener("input", () => {
    win.clearTimeout?.(searching);
    searching = win.setTimeout(() => chat.searchConversations(els.searchInput.value), 250);
  });
  els.drawerClose.addEventListener("click", () => {
    els.drawer.hidden = true;
    els.chats.setAttribute("aria-expanded", "false");
  });
  els.back.addEventListener("click", () => chat.backToCurrent());
  els.theme.addEventListener("click", () => applyTheme(win, els, themes.set(nextTheme(themes.get()))));
  els.earlier.addEventListener("click", async () => {
    const fromBottom = els.log.scrollHeight - els.log.scrollTop;
    await chat.loadEarlier();
    els.log.scrollTop = els.log.scrollHeight - fromBottom; // keep the view where it was
  });
}

function wireTokens(win, els, chat) {
  els.tokenForm.addEventListener("submit", (e) => {
    e.preventDefault();
    chat.submitToken(els.tokenInput.value);
  });
  // A #token= link pasted into the address bar of the open page signs in, asking
  // first when it names another account than the one signed in (chat.openLink).
  win.addEventListener("hashchange", () => {
    const token = takeHashToken(win);
    if (token) chat.openLink(token);
  });
  // Another tab stored another token: this tab stops and says so (chat.storedTokenChanged).
  win.addEventListener("storage", (e) => {
    if (e?.key === undefined || e.key === null || e.key === TOKEN_KEY) chat.storedTokenChanged();
  });
  els.accountReload.addEventListener("click", () => win.location.reload?.());
}

if (typeof window !== "undefined" && typeof document !== "undefined") startPage(window);
