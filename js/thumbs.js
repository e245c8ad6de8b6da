/**
 * Files a person sends, as the page shows them: a chip with an icon by kind
 * (image, voice note, file), the name and size, and a thumbnail for an image,
 * drawn on a <canvas> from the file's bytes (createImageBitmap), so no image
 * URL is needed and the page's CSP stays as strict as it is.
 *
 *   formatSize(bytes)               -> "512 B" | "1.5 KB" | "12 MB"
 *   thumbSize(width, height, side) -> {width, height}  fits in side×side, never larger
 *   fileKind(file)                  -> "photo" | "voice" | "audio" | "document"
 *   drawThumb(win, canvas, blob, side) -> Promise<boolean>  drawn or not
 *   sentChips(win, files, {thumb})  -> <li> per file; `thumb(file, i)` resolves to a
 *                                      Blob to draw (the page's own file, or the daemon's
 *                                      thumbnail of a sent image)
 */

import { icon } from "./icons.js";

/** A byte count as people read it: 512 B, 1.5 KB, 12 KB, 3.4 MB. */
export function formatSize(bytes) {
  const n = Number.isFinite(bytes) && bytes > 0 ? bytes : 0;
  if (n < 1000) return `${Math.round(n)} B`;
  const units = ["KB", "MB", "GB"];
  let value = n / 1000;
  let unit = 0;
  while (value >= 1000 && unit < units.length - 1) {
    value /= 1000;
    unit += 1;
  }
  return `${value < 10 ? value.toFixed(1) : Math.round(value)} ${units[unit]}`;
}

export const THUMB_SIDE = 96;
const KIND_ICONS = { photo: "image", voice: "mic", audio: "speaker", document: "file" };

export function thumbSize(width, height, side = THUMB_SIDE) {
  const w = Math.max(1, Math.round(Number(width) || 1));
  const h = Math.max(1, Math.round(Number(height) || 1));
  const scale = Math.min(1, side / Math.max(w, h));
  return { width: Math.max(1, Math.round(w * scale)), height: Math.max(1, Math.round(h * scale)) };
}

/** What a file is, from what the daemon said (`kind`) or its type (a file picked here). */
export function fileKind(file) {
  if (file && ["photo", "voice", "audio", "document"].includes(file.kind)) return file.kind;
  if (file?.voice) return "voice";
  const type = String(file?.mime || file?.type || file?.file?.type || "");
  if (/^image\/(png|jpeg|gif|webp)$/.test(type)) return "photo";
  if (type.startsWith("audio/")) return "audio";
  return "document";
}

export async function drawThumb(win, canvas, blob, side = THUMB_SIDE) {
  if (!blob || typeof win.createImageBitmap !== "function") return false;
  let bitmap;
  try {
    bitmap = await win.createImageBitmap(blob);
  } catch {
    return false; // not an image the browser can read: the icon stays
  }
  const { width, height } = thumbSize(bitmap.width, bitmap.height, side);
  canvas.width = width;
  canvas.height = height;
  canvas.getContext("2d")?.drawImage(bitmap, 0, 0, width, height);
  bitmap.close?.();
  return true;
}

/** A chip's leading part: the kind's icon, replaced by a thumbnail once one is drawn. */
export function chipLead(win, file, loadBlob) {
  const { document } = win;
  const lead = document.createElement("span");
  lead.className = "chip-lead";
  const kind = fileKind(file);
  lead.append(icon(document, KIND_ICONS[kind], { label: kind === "photo" ? "image" : kind }));
  if (kind === "photo" && loadBlob) {
    const canvas = document.createElement("canvas");
    canvas.className = "thumb";
    Promise.resolve(loadBlob())
      .then((blob) => drawThumb(win, canvas, blob))
      .then((drawn) => {
        if (drawn) lead.replaceChildren(canvas);
      })
      .catch(() => {});
  }
  return lead;
}

/** The files sent with a person's message, one chip each. */
export function sentChips(win, files, { thumb = null } = {}) {
  const { document } = win;
  return (files || []).map((file, i) => {
    const li = document.createElement("li");
    li.className = `chip sent kind-${fileKind(file)}`;
    const name = document.createElement("span");
    name.className = "chip-name";
    name.textContent = file.name;
    const size = document.createElement("small");
    size.textContent = formatSize(file.size);
    const load = file.blob ? () => file.blob : thumb ? () => thumb(file, i) : null;
    li.append(chipLead(win, file, load), name, size);
    return li;
  });
}
