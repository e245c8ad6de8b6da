/**
 * The page's icons: small inline SVG drawings (24×24, stroked in the text
 * colour), never emoji, which show as empty boxes where no emoji font is
 * installed. Drawn here, not copied from an icon set.
 *
 *   icon(document, name, {label})  -> <svg> (aria-hidden unless labelled)
 *   setIcon(el, name, {text})      puts the icon (and optional text) in a button
 *   splitIcons(text)               -> [string | {icon, label}]: the emoji roost's
 *                                     messages use (⏰ 🎙 📎 📷 🔧 …), found in text
 *   iconize(document, root)        replaces those emoji in root's text (not in
 *                                  code) by icons; text nodes only, never HTML
 */

const SVG_NS = "http://www.w3.org/2000/svg";

// Each icon: a list of [tag, attributes]; strokes in currentColor.
const P = (d) => ["path", { d }];
const ICONS = {
  paperclip: [P("M20 11.5l-8.2 8.2a5 5 0 0 1-7.1-7.1l8.6-8.6a3.3 3.3 0 0 1 4.7 4.7l-8.6 8.6a1.7 1.7 0 0 1-2.4-2.4l7.9-7.9")],
  mic: [["rect", { x: 9, y: 3, width: 6, height: 11, rx: 3 }], P("M5.5 11a6.5 6.5 0 0 0 13 0"), P("M12 17.5V21"), P("M8.5 21h7")],
  clock: [["circle", { cx: 12, cy: 13, r: 8 }], P("M12 9v4l2.5 2"), P("M4.5 4.5l-2 2"), P("M19.5 4.5l2 2")],
  camera: [P("M3 8h4l2-3h6l2 3h4v11H3z"), ["circle", { cx: 12, cy: 13, r: 3.5 }]],
  wrench: [P("M14.5 3.5a5 5 0 0 0-4.3 7.2l-6.4 6.4a2 2 0 0 0 2.9 2.9l6.4-6.4a5 5 0 0 0 7.2-4.3l-2.9 2.9-3.1-.6-.6-3.1z")],
  speaker: [P("M4 9h4l5-4v14l-5-4H4z"), P("M16.5 9a4 4 0 0 1 0 6"), P("M19 6.5a7.5 7.5 0 0 1 0 11")],
  mute: [P("M4 9h4l5-4v14l-5-4H4z"), P("M16 9.5l5 5"), P("M21 9.5l-5 5")],
  warning: [P("M12 3.5L2.5 20h19z"), P("M12 10v4.5"), P("M12 17.3v.2")],
  brain: [P("M12 5.5a3 3 0 0 0-5.6 1.3A3.2 3.2 0 0 0 5 12.3a3.1 3.1 0 0 0 2.3 4.8A3 3 0 0 0 12 18.5z"),
    P("M12 5.5a3 3 0 0 1 5.6 1.3 3.2 3.2 0 0 1 1.4 5.5 3.1 3.1 0 0 1-2.3 4.8A3 3 0 0 1 12 18.5z")],
  repeat: [P("M17 2.5l3 3-3 3"), P("M4 11.5v-2a4 4 0 0 1 4-4h12"), P("M7 21.5l-3-3 3-3"), P("M20 12.5v2a4 4 0 0 1-4 4H4")],
  note: [P("M4 20h4L19 9l-4-4L4 16z"), P("M13.5 6.5l4 4")],
  pin: [P("M9 3.5h6l-1 6 3 3.5H7l3-3.5z"), P("M12 13v8")],
  up: [P("M7 10.5V20H3.5v-9.5z"), P("M7 10.5l4-7a2 2 0 0 1 3.2 2.2L13 9.5h6a2 2 0 0 1 2 2.4l-1.4 6.4a2 2 0 0 1-2 1.7H7")],
  down: [["g", { transform: "rotate(180 12 12)" }, [P("M7 10.5V20H3.5v-9.5z"), P("M7 10.5l4-7a2 2 0 0 1 3.2 2.2L13 9.5h6a2 2 0 0 1 2 2.4l-1.4 6.4a2 2 0 0 1-2 1.7H7")]]],
  file: [P("M14 3H6v18h12V7z"), P("M14 3v4h4")],
  image: [["rect", { x: 3, y: 5, width: 18, height: 14, rx: 2 }], ["circle", { cx: 8.5, cy: 10, r: 1.5 }], P("M21 16l-5-5-9 8")],
  close: [P("M6 6l12 12"), P("M18 6L6 18")],
  theme: [["circle", { cx: 12, cy: 12, r: 8.5 }], ["path", { d: "M12 3.5a8.5 8.5 0 0 1 0 17z", fill: "currentColor" }]],
  edit: [P("M4 20h4L19.5 8.5l-4-4L4 16z"), P("M13.5 6.5l4 4")],
  regenerate: [P("M19.5 12a7.5 7.5 0 1 1-2.2-5.3"), P("M19.5 4v4.5H15")],
  left: [P("M15 6l-6 6 6 6")],
  right: [P("M9 6l6 6-6 6")],
  trash: [P("M4 7h16"), P("M9.5 7V4h5v3"), P("M6.5 7l1 13h9l1-13")],
  search: [["circle", { cx: 10.5, cy: 10.5, r: 6.5 }], P("M20 20l-4.8-4.8")],
  chats: [P("M4 5h16v11H9l-5 4z")],
  plus: [P("M12 5v14"), P("M5 12h14")],
  play: [P("M7 4.5l12.5 7.5L7 19.5z")],
  stop: [["rect", { x: 6.5, y: 6.5, width: 11, height: 11, rx: 1.5, fill: "currentColor" }]],
  send: [P("M12 19V5"), P("M6 11l6-6 6 6")],
};

/** Emoji in roost's messages -> [icon, what it says]. */
export const EMOJI = {
  "📎": ["paperclip", "file"],
  "🎙": ["mic", "voice"],
  "⏰": ["clock", "reminder"],
  "📷": ["camera", "photo"],
  "🔧": ["wrench", "tool"],
  "🔊": ["speaker", "spoken"],
  "🔇": ["mute", "not spoken"],
  "⚠": ["warning", "warning"],
  "🧠": ["brain", "memory"],
  "🔁": ["repeat", "repeats"],
  "📝": ["note", "note"],
  "📌": ["pin", "pinned"],
  "👍": ["up", "approved"],
  "👎": ["down", "rejected"],
};
const EMOJI_RE = new RegExp(`(${Object.keys(EMOJI).join("|")})\\uFE0F?`, "gu");

export const ICON_NAMES = Object.keys(ICONS);

function draw(document, parent, parts) {
  for (const [tag, attrs, children] of parts) {
    const node = document.createElementNS(SVG_NS, tag);
    for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, String(v));
    if (children) draw(document, node, children);
    parent.append(node);
  }
}

/** An inline SVG icon; with a label it is announced (role img), else hidden from readers. */
export function icon(document, name, { label = "" } = {}) {
  const parts = ICONS[name];
  if (!parts) throw new Error(`no icon named ${name}`);
  const svg = document.createElementNS(SVG_NS, "svg");
  const attrs = {
    class: `icon-svg icon-${name}`,
    viewBox: "0 0 24 24",
    width: "1.15em",
    height: "1.15em",
    fill: "none",
    stroke: "currentColor",
    "stroke-width": "1.8",
    "stroke-linecap": "round",
    "stroke-linejoin": "round",
    focusable: "false",
  };
  for (const [k, v] of Object.entries(attrs)) svg.setAttribute(k, v);
  if (label) {
    svg.setAttribute("role", "img");
    svg.setAttribute("aria-label", label);
  } else {
    svg.setAttribute("aria-hidden", "true");
  }
  draw(document, svg, parts);
  return svg;
}

/** Make `el` show the icon `name` (and `text` after it, if any); its label stays. */
export function setIcon(el, name, { text = "" } = {}) {
  const parts = [icon(el.ownerDocument, name)];
  if (text) {
    const span = el.ownerDocument.createElement("span");
    span.textContent = text;
    parts.push(span);
  }
  el.replaceChildren(...parts);
}

/** `text` cut at the emoji roost uses: strings and {icon, label} in order. */
export function splitIcons(text) {
  const out = [];
  let last = 0;
  for (const m of String(text).matchAll(EMOJI_RE)) {
    if (m.index > last) out.push(text.slice(last, m.index));
    const [name, label] = EMOJI[m[1]];
    out.push({ icon: name, label });
    last = m.index + m[0].length;
  }
  if (last < text.length) out.push(text.slice(last));
  return out;
}

/** Replace the emoji in the text under `root` (outside code) by icons. */
export function iconize(document, root) {
  if (typeof document.createTreeWalker !== "function" || !root) return;
  const walker = document.createTreeWalker(root, 4 /* NodeFilter.SHOW_TEXT */);
  const found = [];
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    EMOJI_RE.lastIndex = 0;
    if (EMOJI_RE.test(n.nodeValue) && !n.parentElement?.closest("pre, code")) found.push(n);
  }
  for (const n of found) {
    const parts = splitIcons(n.nodeValue).map((p) =>
      typeof p === "string" ? document.createTextNode(p) : icon(document, p.icon, { label: p.label }),
    );
    n.replaceWith(...parts);
  }
}
