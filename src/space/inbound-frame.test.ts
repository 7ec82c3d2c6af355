import { describe, expect, it } from 'vitest';
import { readFrame } from './inbound-frame.js';

describe('readFrame', () => {
  it('passes text frames within the limit', () => {
    expect(readFrame(Buffer.from('{"a":1}'), false, 100)).toEqual({ ok: true, text: '{"a":1}' });
    expect(readFrame([Buffer.from('{"a"'), Buffer.from(':1}')], false, 100)).toEqual({
      ok: true,
      text: '{"a":1}',
    });
  });

  it('refuses binary frames and MEW stream frames', () => {
    expect(readFrame(Buffer.from('{}'), true, 100)).toMatchObject({ ok: false, code: 'invalid_frame' });
    expect(readFrame(Buffer.from('#s1#data'), false, 100)).toMatchObject({
      ok: false,
      code: 'invalid_frame',
    });
    // A JSON string that starts with # is still JSON text.
    expect(readFrame(Buffer.from('#notastream'), false, 100)).toMatchObject({ ok: true });
  });

  it('refuses an oversized frame, naming its id when the head shows one', () => {
    const big = JSON.stringify({ protocol: 'meup/v0.2', id: 'e-42', payload: { x: 'y'.repeat(500) } });
    expect(readFrame(Buffer.from(big), false, 100)).toMatchObject({
      ok: false,
      code: 'frame_too_large',
      envelopeId: 'e-42',
    });
    const noId = JSON.stringify({ payload: { x: 'y'.repeat(500) } });
    const verdict = readFrame(Buffer.from(noId), false, 100);
    expect(verdict).toMatchObject({ ok: false, code: 'frame_too_large' });
    expect(verdict).not.toHaveProperty('envelopeId');
  });
});
