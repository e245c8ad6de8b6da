/**
 * The light/dark switch: "system" (follow the device), "light" or "dark",
 * remembered in localStorage. Pure: the storage is passed in; the page
 * applies the choice as <html data-theme="…"> (none for "system").
 */

export const THEMES = ["system", "light", "dark"];
export const THEME_KEY = "roost.theme";
const LABELS = { system: "Theme: system", light: "Theme: light", dark: "Theme: dark" };

/** The theme after `current` in the cycle system -> light -> dark -> system. */
export function nextTheme(current) {
  const i = THEMES.indexOf(current);
  return THEMES[(i + 1) % THEMES.length];
}

export function themeLabel(theme) {
  return LABELS[theme] ?? LABELS.system;
}

/** The stored choice ("system" when none or unreadable). */
export function createThemeStore(storage) {
  return {
    get() {
      try {
        const t = storage?.getItem(THEME_KEY);
        return THEMES.includes(t) ? t : "system";
      } catch {
        return "system";
      }
    },
    set(theme) {
      if (!THEMES.includes(theme)) throw new Error(`unknown theme ${theme}`);
      try {
        if (theme === "system") storage?.removeItem(THEME_KEY);
        else storage?.setItem(THEME_KEY, theme);
      } catch {
        // private browsing: the choice lasts for this page only
      }
      return theme;
    },
  };
}
