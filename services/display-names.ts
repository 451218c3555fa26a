/**
 * What a name people read in lists may hold (account, workspace, API key, model): the API refuses a
 * name breaking these rules (displayName in api/schemas/common.ts); a name the service makes itself,
 * from a column or an identity provider's profile, is cleaned to them (cleanDisplayName).
 */

/**
 * C0 and C1 control characters (a tab, a line break, a bell, an escape…), and the Unicode line and
 * paragraph separators (U+2028, U+2029), which break the line where a name is shown as a line feed
 * does (a nineteenth probe named a model "x\u2028y").
 */
export const CONTROL_CHARACTER = /[\p{Cc}\p{Zl}\p{Zp}]/u;
/** Bidirectional embeddings, overrides and isolates: they reorder the text displayed after them. */
export const BIDI_CONTROL = /[\u202A-\u202E\u2066-\u2069]/u;
/** A character that shows: not a space, not a format character, not one meant to be ignored in display. */
export const VISIBLE = /[^\p{White_Space}\p{Cf}\p{Default_Ignorable_Code_Point}]/u;

export const MAX_DISPLAY_NAME_LENGTH = 200;

/**
 * `text` without its control characters and bidirectional overrides or isolates, trimmed, and cut to
 * `max` characters (an ellipsis at the end, never half a surrogate pair); null when nothing visible is
 * left.
 */
export function cleanDisplayName(text: string, max = MAX_DISPLAY_NAME_LENGTH): string | null {
  const clean = text.replace(new RegExp(`${CONTROL_CHARACTER.source}|${BIDI_CONTROL.source}`, 'gu'), '').trim();
  if (!VISIBLE.test(clean)) return null;
  if (clean.length <= max) return clean;
  const cut = clean.slice(0, max - 1);
  return `${/[\uD800-\uDBFF]$/.test(cut) ? cut.slice(0, -1) : cut}…`;
}
