/**
 * Voice recording on the page: the mic button records with MediaRecorder
 * (press to start, press again to stop), shows the time while it runs, and
 * hands the recording over as a file (audio/webm) that goes with the next
 * message as a voice note (a chip, like any attached file).
 *
 * Pure parts (no DOM, tested in node):
 *   formatDuration(ms)            -> "0:07", "1:02:03"
 *   pickMimeType(isTypeSupported) -> the first of WebM/Opus, WebM, Ogg/Opus the browser records, or ""
 *   recordingName(date)           -> "voice 2026-12-01 13.34.05.webm"
 *   canRecord(win)                -> whether this browser can record at all
 * DOM glue: wireRecord(win, els, {onRecorded, onError}) drives #mic; hidden when
 * the browser cannot record. The microphone is released when a recording stops.
 */

import { setIcon } from "./icons.js";

export const MIME_TYPES = ["audio/webm;codecs=opus", "audio/webm", "audio/ogg;codecs=opus"];
export const MAX_RECORDING_MS = 10 * 60 * 1000;

export function formatDuration(ms) {
  const total = Math.max(0, Math.floor((Number.isFinite(ms) ? ms : 0) / 1000));
  const h = Math.floor(total / 3600);
  const m = Math.floor((total % 3600) / 60);
  const s = String(total % 60).padStart(2, "0");
  return h ? `${h}:${String(m).padStart(2, "0")}:${s}` : `${m}:${s}`;
}

export function pickMimeType(isTypeSupported) {
  if (typeof isTypeSupported !== "function") return "";
  return MIME_TYPES.find((t) => isTypeSupported(t)) ?? "";
}

export function recordingName(date) {
  const pad = (n) => String(n).padStart(2, "0");
  const d = `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())}`;
  const t = `${pad(date.getHours())}.${pad(date.getMinutes())}.${pad(date.getSeconds())}`;
  return `voice ${d} ${t}.webm`;
}

export function canRecord(win) {
  return Boolean(win?.navigator?.mediaDevices?.getUserMedia) && typeof win?.MediaRecorder === "function";
}

/**
 * One recorder over the window's microphone. start() asks for the microphone
 * and records; stop() ends it and calls onDone(blob, ms). onTick(ms) about
 * twice a second while it runs.
 */
export function createRecorder(win, { onTick = () => {}, onDone = () => {}, onError = () => {}, now = () => Date.now() }) {
  let recorder = null;
  let stream = null;
  let started = 0;
  let timer = null;
  const release = () => {
    if (timer !== null) win.clearInterval(timer);
    timer = null;
    stream?.getTracks().forEach((t) => t.stop());
    stream = null;
  };
  async function start() {
    if (recorder) return;
    try {
      stream = await win.navigator.mediaDevices.getUserMedia({ audio: true });
    } catch (err) {
      onError(err?.name === "NotAllowedError" ? "the microphone was not allowed" : "no microphone to record from");
      return;
    }
    const mimeType = pickMimeType((t) => win.MediaRecorder.isTypeSupported?.(t));
    const chunks = [];
    recorder = new win.MediaRecorder(stream, mimeType ? { mimeType } : undefined);
    recorder.addEventListener("dataavailable", (e) => {
      if (e.data && e.data.size) chunks.push(e.data);
    });
    recorder.addEventListener("stop", () => {
      const ms = now() - started;
      const type = (recorder?.mimeType || mimeType || "audio/webm").split(";")[0];
      recorder = null;
      release();
      onDone(new win.Blob(chunks, { type }), ms);
    });
    started = now();
    recorder.start(250);
    onTick(0);
    timer = win.setInterval(() => {
      const ms = now() - started;
      onTick(ms);
      if (ms >= MAX_RECORDING_MS) stop();
    }, 500);
  }
  function stop() {
    if (recorder && recorder.state !== "inactive") recorder.stop();
  }
  return {
    start,
    stop,
    get recording() {
      return recorder !== null;
    },
  };
}

/** Wire #mic: press to record, press again to stop; the time shows on the button. */
export function wireRecord(win, els, { onRecorded, onError = () => {} }) {
  if (!canRecord(win)) {
    els.mic.hidden = true;
    return null;
  }
  const idle = () => {
    setIcon(els.mic, "mic");
    els.mic.classList.remove("recording");
    els.mic.setAttribute("aria-pressed", "false");
    els.mic.title = "Record a voice note";
  };
  const rec = createRecorder(win, {
    onTick: (ms) => {
      setIcon(els.mic, "stop", { text: formatDuration(ms) });
      els.mic.classList.add("recording");
      els.mic.setAttribute("aria-pressed", "true");
      els.mic.title = "Stop recording";
    },
    onDone: (blob, ms) => {
      idle();
      if (blob.size) onRecorded(blob, { name: recordingName(new Date()), ms });
      else onError("the recording is empty");
    },
    onError: (why) => {
      idle();
      onError(why);
    },
  });
  idle();
  els.mic.addEventListener("click", () => (rec.recording ? rec.stop() : rec.start()));
  return rec;
}
