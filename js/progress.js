/**
 * What a running turn shows besides its text: tool-call cards, a retry
 * line and the model's name. Pure functions over the progress events of
 * api_turn.js; the DOM glue (view.js) draws the result.
 *
 * A message's `tools` is a list of {id, name, state, args, result, ms}
 * (state "start" | "done" | "error"), in the order the calls started.
 */

/** The changes one progress event makes to the reply `msg` (a new object; msg is untouched). */
export function applyProgress(msg, ev) {
  if (ev.type === "tool") return { tools: upsertTool(msg.tools || [], ev), notice: "" };
  if (ev.type === "retry") return { notice: retryLine(ev) };
  if (ev.type === "info") return { model: ev.model };
  return {};
}

function upsertTool(tools, ev) {
  const i = tools.findIndex((t) => t.id === ev.id);
  const prev = i === -1 ? { args: "", result: "" } : tools[i];
  const next = {
    id: ev.id,
    name: ev.name,
    state: ev.state,
    args: ev.args || prev.args,
    result: ev.state === "start" ? "" : ev.result || prev.result,
    ms: ev.ms,
  };
  return i === -1 ? [...tools, next] : tools.map((t, j) => (j === i ? next : t));
}

/** "the model server is busy, retrying 2/4" */
export function retryLine({ attempt, max, reason }) {
  const why = (reason || "the model server did not answer").replace(/[.\s]+$/, "");
  return `${why}, retrying ${attempt}${max ? `/${max}` : ""}`;
}

const BARE = /^[a-z][a-z0-9_]{0,40}$/;
const WIRE = [
  ["me__", ""],
  ["draft__", " (draft)"],
];

/**
 * A tool's name as the person knows it. Model APIs allow no dot, so a saved
 * tool `me.wordcount` travels as `me__wordcount` and a draft as
 * `draft__wordcount` (forge/names.py: a bare name never holds "__", so the
 * mapping is reversible); anything else is shown as it is.
 */
export function toolLabel(name) {
  const wire = String(name ?? "");
  for (const [prefix, suffix] of WIRE) {
    const bare = wire.startsWith(prefix) ? wire.slice(prefix.length) : "";
    if (BARE.test(bare) && !bare.includes("__")) return `me.${bare}${suffix}`;
  }
  return wire;
}

/** One line for a tool card's summary: "me.weather · running…", "… · done in 120 ms", "… · failed". */
export function toolSummary(tool) {
  const time = Number.isFinite(tool.ms) && tool.ms !== null ? ` in ${formatMs(tool.ms)}` : "";
  const name = toolLabel(tool.name);
  if (tool.state === "start") return `${name} · running…`;
  if (tool.state === "error") return `${name} · failed${time}`;
  return `${name} · done${time}`;
}

export function formatMs(ms) {
  return ms < 1000 ? `${ms} ms` : `${(ms / 1000).toFixed(ms < 10000 ? 1 : 0)} s`;
}

/** The status line while a turn runs. */
export function busyStatus(msg, model) {
  const by = model ? ` · ${model}` : "";
  const running = (msg.tools || []).filter((t) => t.state === "start").map((t) => toolLabel(t.name));
  if (running.length) return `Running ${running.join(", ")}…${by}`;
  if (msg.notice) return `${msg.notice[0].toUpperCase()}${msg.notice.slice(1)}…${by}`;
  return `${msg.status === "streaming" ? "Answering…" : "Thinking…"}${by}`;
}
