/**
 * Slash-command hints and Tab completion for the input box.
 *
 * Pure: no DOM, no I/O. The command list comes from GET /api/commands:
 * [{name, usage, summary}, ...]. While the input starts with "/" and the
 * command word is still being typed, commands whose name starts with it are
 * offered by name (so an exact match comes first); once a space follows the
 * word, only the command with exactly that name is shown, as a usage
 * reminder.
 */

const NAME_RE = /^[A-Za-z0-9_][A-Za-z0-9_.-]*$/;

/**
 * Keep only well-formed entries of a /api/commands body, de-duplicated.
 * @param {unknown} body
 * @returns {Array<{name: string, usage: string, summary: string}>}
 */
export function normalizeCommands(body) {
  const list = body && typeof body === "object" && Array.isArray(body.commands) ? body.commands : [];
  const seen = new Set();
  const out = [];
  for (const c of list) {
    if (!c || typeof c.name !== "string") continue;
    const name = c.name.replace(/^\//, "");
    if (!NAME_RE.test(name) || seen.has(name.toLowerCase())) continue;
    seen.add(name.toLowerCase());
    out.push({
      name,
      usage: typeof c.usage === "string" && c.usage ? c.usage : `/${name}`,
      summary: typeof c.summary === "string" ? c.summary : "",
    });
  }
  return out;
}

/**
 * Split an input into the command word being typed and whether it is done.
 * Returns null when the input is not a command (no leading "/").
 * @param {string} input
 * @returns {{word: string, complete: boolean} | null}
 */
export function commandWord(input) {
  if (typeof input !== "string" || !input.startsWith("/")) return null;
  const m = /^\/(\S*)(\s?)/.exec(input);
  return { word: m[1], complete: m[2] !== "" };
}

/**
 * Commands to show as hints for the current input.
 * @param {string} input
 * @param {Array<{name: string, usage: string, summary: string}>} commands
 */
export function matchCommands(input, commands) {
  const cw = commandWord(input);
  if (!cw) return [];
  const word = cw.word.toLowerCase();
  if (cw.complete) return commands.filter((c) => c.name.toLowerCase() === word);
  return commands
    .filter((c) => c.name.toLowerCase().startsWith(word))
    .sort((a, b) => {
      // By lower-cased name: the word itself is a prefix of every other
      // match, so an exact match always sorts first.
      const x = a.name.toLowerCase();
      const y = b.name.toLowerCase();
      return x < y ? -1 : x > y ? 1 : 0;
    });
}

/**
 * The input after Tab: the first match's name and a space, or null when
 * there is nothing to complete (not a command, no match, word already done).
 * @param {string} input
 * @param {Array<{name: string, usage: string, summary: string}>} commands
 * @returns {string | null}
 */
export function completeCommand(input, commands) {
  const cw = commandWord(input);
  if (!cw || cw.complete) return null;
  const first = matchCommands(input, commands)[0];
  if (!first) return null;
  // An unfinished word runs to the end of the input: replace all of it.
  return `/${first.name} `;
}
