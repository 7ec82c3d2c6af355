/**
 * Standard base64 (RFC 4648 §4, with padding) decoded strictly. `Buffer.from(text, 'base64')`
 * skips invalid characters and ignores missing padding, so two different strings could decode to
 * the same key or signature; signed notes and checkpoints must have exactly one spelling.
 */

const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/**
 * The bytes of `text` when it is canonical padded standard base64 (no whitespace, no URL-safe
 * alphabet, zero padding bits); otherwise `undefined`.
 */
export function decodeBase64Strict(text: string): Buffer | undefined {
  if (!BASE64.test(text)) return undefined;
  const bytes = Buffer.from(text, 'base64');
  // Non-zero padding bits ("QR==" vs "QQ==") decode to the same bytes: accept only the canonical one.
  return bytes.toString('base64') === text ? bytes : undefined;
}
