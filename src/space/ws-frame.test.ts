import { describe, expect, it } from 'vitest';
import { serverTextFrame } from './ws-frame.js';

describe('serverTextFrame', () => {
  it('writes a FIN text frame, unmasked, with the shortest length form', () => {
    for (const [n, header] of [
      [0, 2],
      [125, 2],
      [126, 4],
      [65_535, 4],
      [65_536, 10],
      [200_000, 10],
    ] as const) {
      const { frame, payload } = serverTextFrame('x'.repeat(n));
      expect(frame.length).toBe(header + n);
      expect(frame[0]).toBe(0x81);
      expect(frame[1]! & 0x80).toBe(0);
      const length =
        header === 2 ? frame[1] : header === 4 ? frame.readUInt16BE(2) : Number(frame.readBigUInt64BE(2));
      expect(length).toBe(n);
      expect(frame[1]).toBe(header === 2 ? n : header === 4 ? 126 : 127);
      expect(payload.length).toBe(n);
      expect(payload.buffer).toBe(frame.buffer);
    }
  });

  it('counts UTF-8 bytes, not characters', () => {
    const text = `é${'🌍'.repeat(40)}`;
    const { frame, payload } = serverTextFrame(text);
    expect(payload.length).toBe(Buffer.byteLength(text));
    expect(frame[1]).toBe(126);
    expect(frame.readUInt16BE(2)).toBe(Buffer.byteLength(text));
    expect(payload.toString('utf8')).toBe(text);
  });
});
