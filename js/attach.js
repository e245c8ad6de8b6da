/**
 * Files sent with a message: the attach button, an image pasted from the
 * clipboard, files dropped on the page, one chip per file (an icon or the
 * image's thumbnail, name, size, remove) before sending, and the upload (POST /api/upload, one file each,
 * multipart) that turns each into an id for the message's `attachments`.
 *
 * Pure parts (no DOM, tested in node):
 *   formatSize(bytes)                -> "512 B" | "1.5 KB" | "12 MB" (thumbs.js)
 *   createAttachments({max, onChange}) the chip list: add(file, {name, voice}),
 *                                    remove(key), clear(), items
 *   filesFromTransfer(dataTransfer)  -> File[] (clipboard or drop)
 *   uploadRequest(item, token)       -> {path, init} for fetch
 *   createUploader({fetch, getToken}) -> {upload(item, {signal})}, failures as ApiError
 *   sentFiles(items)                 -> the chips as a sent message shows them
 * DOM glue: wireAttach(win, els, list, {onRefused}) draws the chips into
 * #chips and wires #attach / #file-input, paste and drop on the window.
 * The server decides what a file is (it sniffs the bytes); the page only
 * shows what it will send.
 */

import { ApiError, httpError, wrapFailure } from "./api_util.js";
import { setIcon } from "./icons.js";
import { chipLead, fileKind, formatSize } from "./thumbs.js";

export { formatSize };

export const MAX_FILES = 10;

/** The name a chip shows: the file's own, or a made-up one for a pasted image. */
export function chipName(file, fallback = "file") {
  const raw = typeof file?.name === "string" ? file.name.trim() : "";
  const name = raw.split(/[\\/]/).pop() || "";
  if (name) return name.slice(0, 120);
  const ext = typeof file?.type === "string" && /^image\/(png|jpeg|gif|webp)$/.test(file.type) ? file.type.slice(6) : "";
  return ext ? `pasted image.${ext === "jpeg" ? "jpg" : ext}` : fallback;
}

/**
 * The files waiting to go with the next message, in order.
 * add() answers {ok: true, item} or {ok: false, reason}; onChange(items) after each change.
 */
export function createAttachments({ max = MAX_FILES, onChange = () => {} } = {}) {
  let items = [];
  let next = 1;
  const changed = () => onChange(items.slice());
  return {
    add(file, { name, voice = false } = {}) {
      if (!file || !Number.isFinite(file.size)) return { ok: false, reason: "that is not a file" };
      if (items.length >= max) return { ok: false, reason: `at most ${max} files per message` };
      if (file.size === 0) return { ok: false, reason: `${chipName(file)} is empty` };
      const item = { key: `a${next++}`, file, name: name || chipName(file), size: file.size, voice: Boolean(voice) };
      items = [...items, item];
      changed();
      return { ok: true, item };
    },
    remove(key) {
      const before = items.length;
      items = items.filter((i) => i.key !== key);
      if (items.length !== before) changed();
      return items.length !== before;
    },
    clear() {
      if (!items.length) return;
      items = [];
      changed();
    },
    get items() {
      return items.slice();
    },
  };
}

/** The files of a paste or a drop (a DataTransfer): its `files`, else its file items. */
export function filesFromTransfer(dt) {
  if (!dt) return [];
  const files = Array.from(dt.files ?? []);
  if (files.length) return files;
  const out = [];
  for (const item of Array.from(dt.items ?? [])) {
    if (item && item.kind === "file" && typeof item.getAsFile === "function") {
      const f = item.getAsFile();
      if (f) out.push(f);
    }
  }
  return out;
}

/** The fetch arguments that upload one chip's file (multipart, one part "file"). */
export function uploadRequest(item, token) {
  const body = new FormData();
  body.append("file", item.file, item.name);
  return {
    path: `/api/upload${item.voice ? "?voice=1" : ""}`,
    init: {
      method: "POST",
      headers: { Accept: "application/json", Authorization: `Bearer ${token}` },
      body, // the browser sets Content-Type with the multipart boundary
      cache: "no-store",
    },
  };
}

export function createUploader({ fetch: fetchFn, getToken, baseUrl = "" }) {
  async function upload(item, { signal } = {}) {
    const token = getToken();
    if (!token) throw new ApiError("no access token", { kind: "unauthorized", status: 401 });
    const { path, init } = uploadRequest(item, token);
    let res;
    try {
      res = await fetchFn(baseUrl + path, { ...init, signal });
    } catch (err) {
      throw wrapFailure(err, "network", `cannot upload ${item.name}`);
    }
    if (res.status === 401) throw new ApiError("the access token was refused", { kind: "unauthorized", status: 401 });
    if (!res.ok) {
      const err = await httpError(res);
      throw new ApiError(`${item.name}: ${err.message}`, { kind: "http", status: res.status });
    }
    const body = await res.json().catch(() => null);
    if (!body || typeof body.id !== "string" || !/^[0-9a-f]{32}$/.test(body.id)) {
      throw new ApiError(`the daemon's answer to the upload of ${item.name} has no id`, { kind: "protocol" });
    }
    return body;
  }

  /** Upload every chip in order; resolves to their ids (the first failure rejects). */
  async function uploadAll(items, { signal, onEach = () => {} } = {}) {
    const ids = [];
    for (const [i, item] of items.entries()) {
      onEach(item, i);
      ids.push((await upload(item, { signal })).id);
    }
    return ids;
  }

  return { upload, uploadAll };
}

/** One chip: an icon or the image's thumbnail, the name, the size and a remove button. */
function chip(win, item, onRemove) {
  const { document } = win;
  const li = document.createElement("li");
  li.className = `chip${item.voice ? " voice" : ""}`;
  const name = document.createElement("span");
  name.className = "chip-name";
  name.textContent = item.name;
  const size = document.createElement("small");
  size.textContent = formatSize(item.size);
  const remove = document.createElement("button");
  remove.type = "button";
  remove.className = "quiet chip-remove";
  setIcon(remove, "close");
  remove.setAttribute("aria-label", `Remove ${item.name}`);
  remove.addEventListener("click", () => onRemove(item.key));
  li.append(chipLead(win, item, () => item.file), name, size, remove);
  return li;
}

/** The chips as the person's sent message shows them ({name, kind, mime, size, blob}). */
export function sentFiles(items) {
  return items.map((i) => ({ name: i.name, kind: fileKind(i), mime: i.file?.type || "", size: i.size, blob: i.file }));
}

/** Draw the chips and wire the attach button, paste and drop to `list`. */
export function wireAttach(win, els, list, { onRefused = () => {} } = {}) {
  const { document } = win;
  const addAll = (files) => {
    for (const f of files) {
      const r = list.add(f);
      if (!r.ok) onRefused(r.reason);
    }
  };
  const draw = (items) => {
    els.chips.replaceChildren(...items.map((item) => chip(win, item, (key) => list.remove(key))));
    els.chips.hidden = items.length === 0;
  };
  els.attach.addEventListener("click", () => els.fileInput.click?.());
  els.fileInput.addEventListener("change", () => {
    addAll(Array.from(els.fileInput.files ?? []));
    els.fileInput.value = ""; // the same file may be picked again
  });
  win.addEventListener("paste", (e) => {
    const files = filesFromTransfer(e.clipboardData);
    if (!files.length || !els.tokenView.hidden) return; // text pastes as text
    e.preventDefault();
    addAll(files);
  });
  const carriesFiles = (e) => Array.from(e.dataTransfer?.types ?? []).includes("Files");
  win.addEventListener("dragover", (e) => {
    if (!carriesFiles(e)) return;
    e.preventDefault(); // allow the drop
    els.composer.classList.add("dropping");
  });
  win.addEventListener("dragleave", () => els.composer.classList.remove("dropping"));
  win.addEventListener("drop", (e) => {
    els.composer.classList.remove("dropping");
    const files = filesFromTransfer(e.dataTransfer);
    if (!files.length) return;
    e.preventDefault(); // never let the browser open the file in place of the page
    if (els.composer.hidden) return;
    addAll(files);
  });
  return draw;
}
