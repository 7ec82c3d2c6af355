/**
 * One WebSocket message from a participant, before it is an envelope: text of bounded size. What
 * cannot be read still gets a precise answer: an oversized frame is refused with its envelope id
 * when the first bytes show one (the transports' head sniffer), a binary frame or a MEW stream
 * frame (`#<stream>#<data>`, which this gateway does not carry) is refused as such.
 */
import { sniffHead } from '../transports/sniff-head.js';
import { SpaceErrorCode } from './space-error-codes.js';

export type FrameVerdict =
  | { readonly ok: true; readonly text: string }
  | {
      readonly ok: false;
      readonly code: SpaceErrorCode;
      readonly message: string;
      /** The envelope id read from the frame's head, when there was one. */
      readonly envelopeId?: string;
    };

/** How much of an oversized frame is read to find its id. */
const HEAD_BYTES = 4096;

function bytesOf(data: Buffer | ArrayBuffer | Buffer[]): Buffer {
  if (Buffer.isBuffer(data)) return data;
  if (Array.isArray(data)) return Buffer.concat(data);
  return Buffer.from(data);
}

/** Judges one frame as `ws` delivers it (`isBinary` false for text frames). */
export function readFrame(
  data: Buffer | ArrayBuffer | Buffer[],
  isBinary: boolean,
  maxFrameBytes: number,
): FrameVerdict {
  const bytes = bytesOf(data);
  if (isBinary) {
    return {
      ok: false,
      code: SpaceErrorCode.InvalidFrame,
      message: 'binary frames are not envelopes: send each envelope as one JSON text frame',
    };
  }
  if (bytes.length > maxFrameBytes) {
    const sniff = sniffHead(bytes.subarray(0, HEAD_BYTES).toString('utf8'));
    return {
      ok: false,
      code: SpaceErrorCode.FrameTooLarge,
      message: `the frame is ${bytes.length} bytes; the space accepts at most ${maxFrameBytes} (space.maxFrameBytes)`,
      ...(typeof sniff.id === 'string' && sniff.id.length > 0 && sniff.id.length <= 256
        ? { envelopeId: sniff.id }
        : {}),
    };
  }
  const text = bytes.toString('utf8');
  if (text.startsWith('#') && /^#[^#]+#/.test(text)) {
    return {
      ok: false,
      code: SpaceErrorCode.InvalidFrame,
      message: 'MEW stream frames (#<stream>#<data>) are not supported by this gateway',
    };
  }
  return { ok: true, text };
}
