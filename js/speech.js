/**
 * Spoken answers in the page: after `/voice on` an answer comes with its voice
 * as a file of the reply (audio/ogg, a one-time signed /files/ link). The page
 * fetches it once, keeps the bytes as a blob: URL and plays it in an <audio>
 * element (the CSP allows media from blob:), starting at once when the
 * browser lets it.
 *
 *   isSpoken(file)                   -> whether a reply file is audio to play
 *   speechPlayer(win, file, {autoplay}) -> <div class="speech"> with the player
 */

import { icon } from "./icons.js";

export function isSpoken(file) {
  return Boolean(file) && /^audio\//.test(file.mime || "") && /^\/files\//.test(file.url || "");
}

export function speechPlayer(win, file, { autoplay = true } = {}) {
  const { document } = win;
  const box = document.createElement("div");
  box.className = "speech";
  const label = document.createElement("span");
  label.className = "speech-label";
  label.append(icon(document, "speaker", { label: "spoken answer" }));
  const audio = document.createElement("audio");
  audio.controls = true;
  audio.preload = "auto";
  box.append(label, audio);
  const failed = (why) => {
    const note = document.createElement("span");
    note.className = "notice";
    note.textContent = `The spoken answer could not be played (${why}).`;
    audio.replaceWith(note);
  };
  win
    .fetch(file.url, { cache: "no-store" })
    .then(async (res) => {
      if (!res.ok) throw new Error(`HTTP ${res.status}`);
      const blob = await res.blob();
      audio.src = win.URL.createObjectURL(blob);
      box.dataset.ready = "true";
      if (autoplay) audio.play?.()?.catch?.(() => {}); // a browser may want a tap first
    })
    .catch((err) => failed(err.message || "no connection"));
  return box;
}
