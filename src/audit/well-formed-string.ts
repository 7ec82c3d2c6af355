/**
 * Lone surrogates: the one way a JavaScript string can fail to be Unicode. RFC 8785 forbids them
 * (they have no UTF-8 encoding), so every audit primitive that hashes or prints text checks or
 * repairs them here. Node 20 has the native ES2024 methods; the project's `lib` is ES2023, so they
 * are reached through a narrow cast instead of widening the global types for everyone.
 */

interface Es2024String {
  isWellFormed(): boolean;
  toWellFormed(): string;
}

/** True when `text` contains no lone surrogate, i.e. it has an exact UTF-8 encoding. */
export function isWellFormedString(text: string): boolean {
  return (text as unknown as Es2024String).isWellFormed();
}

/** `text` with every lone surrogate replaced by U+FFFD; well-formed text is returned unchanged. */
export function toWellFormedString(text: string): string {
  return (text as unknown as Es2024String).toWellFormed();
}
