import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { formatCheckpoint, parseCheckpoint } from './checkpoint.js';
import { leafHash, MerkleAccumulator } from './merkle.js';
import { generateNoteKey, parseSignerKey, parseVerifierKey, signNote, verifyNote } from './signed-note.js';

// The example body of the C2SP tlog-checkpoint specification.
const SPEC_BODY = 'example.com/behind-the-sofa\n20852163\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n';
const SPEC_ROOT = Buffer.from('CsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=', 'base64');

describe('formatCheckpoint', () => {
  it('writes the C2SP example body', () => {
    expect(
      formatCheckpoint({ origin: 'example.com/behind-the-sofa', size: 20852163, rootHash: SPEC_ROOT }),
    ).toBe(SPEC_BODY);
  });

  it('appends extension lines', () => {
    expect(
      formatCheckpoint({ origin: 'o', size: 0, rootHash: new Uint8Array(32), extensions: ['x y', 'z'] }),
    ).toBe('o\n0\nAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\nx y\nz\n');
  });

  it.each([
    ['an empty origin', { origin: '', size: 1, rootHash: SPEC_ROOT }],
    ['a newline in the origin', { origin: 'a\nb', size: 1, rootHash: SPEC_ROOT }],
    ['a negative size', { origin: 'o', size: -1, rootHash: SPEC_ROOT }],
    ['a fractional size', { origin: 'o', size: 1.5, rootHash: SPEC_ROOT }],
    ['an unsafe size', { origin: 'o', size: 2 ** 53, rootHash: SPEC_ROOT }],
    ['a short root', { origin: 'o', size: 1, rootHash: new Uint8Array(31) }],
    ['an empty extension', { origin: 'o', size: 1, rootHash: SPEC_ROOT, extensions: [''] }],
    [
      'a control character in an extension',
      { origin: 'o', size: 1, rootHash: SPEC_ROOT, extensions: ['a\u0007'] },
    ],
  ])('refuses %s', (_, input) => {
    expect(() => formatCheckpoint(input)).toThrow(/Invalid checkpoint/);
  });
});

describe('parseCheckpoint', () => {
  it('reads the C2SP example body', () => {
    const parsed = parseCheckpoint(SPEC_BODY);
    expect(parsed.ok).toBe(true);
    if (!parsed.ok) return;
    expect(parsed.checkpoint.origin).toBe('example.com/behind-the-sofa');
    expect(parsed.checkpoint.size).toBe(20852163);
    expect(Buffer.from(parsed.checkpoint.rootHash)).toEqual(SPEC_ROOT);
    expect(parsed.checkpoint.extensions).toEqual([]);
  });

  it('accepts an origin with spaces (the Go checksum database uses one) and extensions', () => {
    const parsed = parseCheckpoint(`go.sum database tree\n0\n${SPEC_ROOT.toString('base64')}\next one\n`);
    expect(parsed).toMatchObject({
      ok: true,
      checkpoint: { origin: 'go.sum database tree', size: 0, extensions: ['ext one'] },
    });
  });

  it.each([
    ['no final newline', SPEC_BODY.slice(0, -1)],
    ['two lines', 'o\n1\n'],
    ['an empty origin', `\n1\n${SPEC_ROOT.toString('base64')}\n`],
    ['a leading zero', `o\n01\n${SPEC_ROOT.toString('base64')}\n`],
    ['a sign', `o\n+1\n${SPEC_ROOT.toString('base64')}\n`],
    ['a negative size', `o\n-1\n${SPEC_ROOT.toString('base64')}\n`],
    ['a decimal point', `o\n1.0\n${SPEC_ROOT.toString('base64')}\n`],
    ['an exponent', `o\n1e3\n${SPEC_ROOT.toString('base64')}\n`],
    ['a huge size', `o\n9007199254740993\n${SPEC_ROOT.toString('base64')}\n`],
    ['an empty size', `o\n\n${SPEC_ROOT.toString('base64')}\n`],
    ['unpadded base64', `o\n1\n${SPEC_ROOT.toString('base64').replace('=', '')}\n`],
    ['url-safe base64', 'o\n1\n-_8AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n'],
    ['non-canonical padding bits', 'o\n1\nAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAB=\n'],
    ['a 31-byte root', `o\n1\n${Buffer.alloc(31).toString('base64')}\n`],
    ['an empty extension line', `${SPEC_BODY}\n`],
    ['a carriage return', `o\r\n1\n${SPEC_ROOT.toString('base64')}\n`],
    ['a lone surrogate', `o\ud800\n1\n${SPEC_ROOT.toString('base64')}\n`],
  ])('refuses %s without throwing', (_, body) => {
    const parsed = parseCheckpoint(body);
    expect(parsed.ok).toBe(false);
    expect(!parsed.ok && typeof parsed.detail).toBe('string');
  });

  it('round-trips any valid checkpoint', () => {
    const line = fc
      .string({ minLength: 1, maxLength: 30, unit: 'grapheme' })
      .filter((s) => [...s].every((c) => (c.codePointAt(0) as number) >= 0x20));
    fc.assert(
      fc.property(
        line,
        fc.maxSafeNat(),
        fc.uint8Array({ minLength: 32, maxLength: 32 }),
        fc.array(line, { maxLength: 3 }),
        (origin, size, rootHash, extensions) => {
          const body = formatCheckpoint({ origin, size, rootHash, extensions });
          const parsed = parseCheckpoint(body);
          expect(parsed).toEqual({
            ok: true,
            checkpoint: { origin, size, rootHash: Buffer.from(rootHash), extensions },
          });
        },
      ),
    );
  });
});

describe('signed checkpoints', () => {
  it('signs a tree head, verifies it and reads it back', () => {
    const key = generateNoteKey('switchboard.test/audit');
    const accumulator = new MerkleAccumulator();
    for (const line of ['{"seq":0}', '{"seq":1}', '{"seq":2}']) accumulator.append(leafHash(line));
    const body = formatCheckpoint({
      origin: 'switchboard.test/audit',
      size: accumulator.size,
      rootHash: accumulator.root(),
    });
    const note = signNote(body, parseSignerKey(key.signerKey));
    const opened = verifyNote(note, [parseVerifierKey(key.verifierKey)]);
    expect(opened.ok).toBe(true);
    if (!opened.ok) return;
    const parsed = parseCheckpoint(opened.text);
    expect(parsed.ok && parsed.checkpoint.size).toBe(3);
    expect(parsed.ok && Buffer.from(parsed.checkpoint.rootHash)).toEqual(accumulator.root());
  });
});
