/**
 * RFC 6455 framing of one text message as a server sends it: a single frame (FIN), opcode 1, no
 * mask, no extension bits. The header and the text's UTF-8 are made in one Buffer, so that a
 * message fanned out to N sockets is converted and framed once and written to each socket as one
 * chunk (`ws` would frame it again per socket and write two chunks: its header, then the payload).
 */

/** A text message framed once: the whole frame, and its payload (a view into it, not a copy). */
export interface ServerTextFrame {
  /** Header and payload: what goes on the wire. Shared: never write into it. */
  readonly frame: Buffer;
  /** The text as UTF-8: the frame's payload. */
  readonly payload: Buffer;
}

export function serverTextFrame(text: string): ServerTextFrame {
  const length = Buffer.byteLength(text, 'utf8');
  const header = length < 126 ? 2 : length < 65_536 ? 4 : 10;
  const frame = Buffer.allocUnsafe(header + length);
  frame[0] = 0x81; // FIN | opcode 1 (text)
  if (length < 126) frame[1] = length;
  else if (length < 65_536) {
    frame[1] = 126;
    frame.writeUInt16BE(length, 2);
  } else {
    // A 64-bit length; a JavaScript string's UTF-8 is far below 2^32 bytes.
    frame[1] = 127;
    frame.writeUInt32BE(Math.floor(length / 2 ** 32), 2);
    frame.writeUInt32BE(length >>> 0, 6);
  }
  frame.write(text, header, length, 'utf8');
  return { frame, payload: frame.subarray(header) };
}
