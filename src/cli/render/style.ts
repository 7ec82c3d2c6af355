/**
 * Terminal styling for the trace renderers. Renderers take a `color` flag instead of probing the
 * terminal themselves, so that output piped to a file or another program carries no escape codes
 * and tests see plain text; the command decides (stdout is a TTY, `NO_COLOR` unset).
 */

/** A way to paint a piece of text; the identity when colour is off. */
export type Paint = (text: string) => string;

/** The palette the renderers use, by meaning rather than by colour. */
export interface Style {
  /** Secondary information: times, ids, participants. */
  readonly dim: Paint;
  readonly bold: Paint;
  readonly request: Paint;
  readonly response: Paint;
  readonly notification: Paint;
  readonly error: Paint;
}

const ESC = String.fromCharCode(27);

function sgr(open: number, close: number): Paint {
  return (text) => (text === '' ? text : `${ESC}[${open}m${text}${ESC}[${close}m`);
}

const plain: Paint = (text) => text;

/** The palette for `color`: ANSI SGR codes when true, no codes at all when false. */
export function createStyle(color: boolean): Style {
  if (!color) {
    return { dim: plain, bold: plain, request: plain, response: plain, notification: plain, error: plain };
  }
  return {
    dim: sgr(2, 22),
    bold: sgr(1, 22),
    request: sgr(36, 39),
    response: sgr(32, 39),
    notification: sgr(33, 39),
    error: sgr(31, 39),
  };
}
