// record.js: the pure parts, and the recorder's life cycle over a small
// stand-in for getUserMedia and MediaRecorder (the real ones run in
// Chromium: tests/spine/test_browser_attach.py).
import { test } from "node:test";
import assert from "node:assert/strict";
import { canRecord, createRecorder, formatDuration, MIME_TYPES, pickMimeType, recordingName } from "../record.js";

test("durations read as a clock", () => {
  const cases = [[0, "0:00"], [999, "0:00"], [7_400, "0:07"], [62_000, "1:02"], [3_723_000, "1:02:03"], [-1, "0:00"], [NaN, "0:00"]];
  for (const [ms, want] of cases) assert.equal(formatDuration(ms), want, `${ms}`);
});

test("the recording type: WebM/Opus first, whatever the browser records, else none", () => {
  assert.equal(pickMimeType(() => true), "audio/webm;codecs=opus");
  assert.equal(pickMimeType((t) => t === "audio/webm"), "audio/webm");
  assert.equal(pickMimeType((t) => t === "audio/ogg;codecs=opus"), "audio/ogg;codecs=opus");
  assert.equal(pickMimeType(() => false), "");
  assert.equal(pickMimeType(undefined), "");
  assert.ok(MIME_TYPES.every((t) => t.startsWith("audio/")));
});

test("a recording's name says when it was made", () => {
  assert.equal(recordingName(new Date(2026, 11, 1, 9, 4, 5)), "voice 2026-12-01 09.04.05.webm");
});

test("only a browser with a microphone API and MediaRecorder can record", () => {
  assert.equal(canRecord({ navigator: {} }), false);
  assert.equal(canRecord({ navigator: { mediaDevices: { getUserMedia() {} } } }), false);
  assert.equal(canRecord({ navigator: { mediaDevices: { getUserMedia() {} } }, MediaRecorder: class {} }), true);
});

function fakeWin({ allow = true } = {}) {
  const stopped = [];
  const intervals = [];
  class FakeRecorder extends EventTarget {
    static isTypeSupported = (t) => t === "audio/webm;codecs=opus";
    constructor(stream, opts) {
      super();
      this.mimeType = opts?.mimeType ?? "";
      this.state = "inactive";
    }
    start() {
      this.state = "recording";
    }
    stop() {
      this.state = "inactive";
      const data = new Event("dataavailable");
      data.data = new Blob(["\x1a\x45\xdf\xa3webm"], { type: this.mimeType });
      this.dispatchEvent(data);
      this.dispatchEvent(new Event("stop"));
    }
  }
  return {
    stopped,
    intervals,
    win: {
      navigator: {
        mediaDevices: {
          async getUserMedia() {
            if (!allow) throw Object.assign(new Error("denied"), { name: "NotAllowedError" });
            return { getTracks: () => [{ stop: () => stopped.push("track") }] };
          },
        },
      },
      MediaRecorder: FakeRecorder,
      Blob,
      setInterval: (fn) => intervals.push(fn),
      clearInterval: () => stopped.push("timer"),
    },
  };
}

test("start, ticks, stop: one WebM blob with its length, and the microphone released", async () => {
  const f = fakeWin();
  let now = 1000;
  const ticks = [];
  let done = null;
  const rec = createRecorder(f.win, { now: () => now, onTick: (ms) => ticks.push(ms), onDone: (blob, ms) => (done = { blob, ms }) });
  await rec.start();
  assert.equal(rec.recording, true);
  now = 2600;
  f.intervals[0]();
  rec.stop();
  assert.equal(rec.recording, false);
  assert.deepEqual(ticks, [0, 1600]);
  assert.equal(done.ms, 1600);
  assert.equal(done.blob.type, "audio/webm");
  assert.match(await done.blob.text(), /webm/);
  assert.deepEqual(f.stopped, ["timer", "track"]);
});

test("a refused microphone is reported, nothing records", async () => {
  const f = fakeWin({ allow: false });
  let why = "";
  const rec = createRecorder(f.win, { onError: (w) => (why = w) });
  await rec.start();
  assert.equal(why, "the microphone was not allowed");
  assert.equal(rec.recording, false);
});
