/**
 * One-tap actions of a reply: buttons whose press sends `command` as the
 * person's next message (e.g. "/yes k3f9" to keep a correction).
 *
 * withActions(result, actions) keeps only well-formed actions from the
 * daemon's reply (a label and a slash command of at most 64 bytes, at most
 * MAX_ACTIONS); actionButtons(document, actions, send) builds the buttons.
 * A pressed button disables its row, so one offer is not confirmed twice by
 * a double click. Labels are text, never HTML.
 */

export const MAX_ACTIONS = 4;
const MAX_COMMAND_BYTES = 64;
const enc = new TextEncoder();

/** The well-formed actions of a reply ([] when none). */
export function cleanActions(actions) {
  if (!Array.isArray(actions)) return [];
  return actions
    .filter(
      (a) =>
        a &&
        typeof a.label === "string" &&
        a.label.trim() &&
        typeof a.command === "string" &&
        a.command.startsWith("/") &&
        enc.encode(a.command).length <= MAX_COMMAND_BYTES,
    )
    .slice(0, MAX_ACTIONS)
    .map(({ label, command }) => ({ label: label.slice(0, 64), command }));
}

/** `result` with `actions` added when the reply offers any. */
export function withActions(result, actions) {
  const ok = cleanActions(actions);
  return ok.length ? { ...result, actions: ok } : result;
}

/**
 * Buttons for `actions`; pressing one disables all of them and calls send(command).
 * `settled`: the offer was taken already (its command sent since, told by the
 * history): the buttons show, disabled, saying so.
 */
export function actionButtons(document, actions, send, settled = false) {
  const buttons = cleanActions(actions).map((action) => {
    const button = document.createElement("button");
    button.type = "button";
    button.className = "action";
    button.textContent = action.label;
    button.title = settled ? `${action.command} (already sent)` : action.command;
    button.disabled = Boolean(settled);
    button.addEventListener("click", () => {
      if (button.disabled) return;
      for (const b of buttons) b.disabled = true;
      send(action.command);
    });
    return button;
  });
  return buttons;
}
