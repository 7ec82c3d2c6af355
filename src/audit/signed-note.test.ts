import { describe, expect, it } from 'vitest';
import { SwitchboardError } from '../errors/switchboard-error.js';
import {
  encodeVerifierKey,
  generateNoteKey,
  isValidKeyName,
  MAX_NOTE_SIGNATURES,
  type NoteVerifier,
  noteKeyId,
  parseSignerKey,
  parseVerifierKey,
  signNote,
  verifyNote,
} from './signed-note.js';

// Public test vectors of golang.org/x/mod/sumdb/note (note_test.go): the formats are shared, and
// Ed25519 is deterministic, so our signature must equal Go's byte for byte.
const PETER_SIGNER = 'PRIVATE+KEY+PeterNeumann+c74f20a3+AYEKFALVFGyNhPJEMzD1QIDr+Y7hfZx09iUvxdXHKDFz';
const PETER_VERIFIER = 'PeterNeumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW';
const ENOCH_VERIFIER = 'EnochRoot+af0cfe78+ATtqJ7zOtqQtYqOo0CpvDXNlMhV3HeJDpjrASKGLWdop';
const TEXT =
  "If you think cryptography is the answer to your problem,\nthen you don't know what your problem is.\n";
const PETER_SIG =
  '— PeterNeumann x08go/ZJkuBS9UG/SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1FFYC2pZSNXgKvqfqdngotpRZb6KE6RyyBwJnAM=\n';
const ENOCH_SIG =
  '— EnochRoot rwz+eBzmZa0SO3NbfRGzPCpDckykFXSdeX+MNtCOXm2/5n2tiOHp+vAF1aGrQ5ovTG01oOTGwnWLox33WWd1RvMc+QQ=\n';

// A real checkpoint of the Go checksum database (sum.golang.org), a C2SP signed note verified
// with the key every Go toolchain embeds.
const SUMDB_VERIFIER = 'sum.golang.org+033de0ae+Ac4zctda0e5eza+HJyk9SxEdh+s3Ux18htTTAD8OuAn8';
const SUMDB_NOTE =
  'go.sum database tree\n63512409\nF7eHRPqN/cqPtqti14NKdGGaI1Giw8coWP3KxihFZbg=\n\n' +
  '— sum.golang.org Az3gri1OBHKT87Xj8UXU8zjoHGy/X+7Nl94f8TZkELVaasolmGApUsWqwVG9vE6hgqYb/ph/w2vdkLIVRH7bMB/FPQ4=\n';

describe('Go sumdb/note interoperability vectors', () => {
  it('parses the signer key and derives the published verifier key', () => {
    const signer = parseSignerKey(PETER_SIGNER);
    expect(signer.name).toBe('PeterNeumann');
    expect(signer.keyId).toBe(0xc74f20a3);
    expect(signer.verifierKey).toBe(PETER_VERIFIER);
    const verifier = parseVerifierKey(PETER_VERIFIER);
    expect([verifier.name, verifier.keyId, verifier.verifierKey]).toEqual([
      'PeterNeumann',
      0xc74f20a3,
      PETER_VERIFIER,
    ]);
  });

  it('signs exactly as Go does', () => {
    expect(signNote(TEXT, parseSignerKey(PETER_SIGNER))).toBe(`${TEXT}\n${PETER_SIG}`);
  });

  it('verifies known signatures and ignores unknown ones', () => {
    const peter = parseVerifierKey(PETER_VERIFIER);
    const enoch = parseVerifierKey(ENOCH_VERIFIER);
    const note = `${TEXT}\n${PETER_SIG}${ENOCH_SIG}`;
    expect(verifyNote(note, [peter])).toEqual({
      ok: true,
      text: TEXT,
      signatures: [
        { name: 'PeterNeumann', keyId: 0xc74f20a3, status: 'verified' },
        { name: 'EnochRoot', keyId: 0xaf0cfe78, status: 'unknown_key' },
      ],
    });
    const both = verifyNote(note, [peter, enoch]);
    expect(both.ok && both.signatures.map((s) => s.status)).toEqual(['verified', 'verified']);
    const none = verifyNote(note, []);
    expect(none).toMatchObject({ ok: false, reason: 'unknown_key' });
    expect(none).not.toHaveProperty('text');
  });

  it('rejects the whole note when a known key signature is bad', () => {
    const peter = parseVerifierKey(PETER_VERIFIER);
    const bad = `${PETER_SIG.slice(0, 60)}ABCD${PETER_SIG.slice(60)}`;
    const result = verifyNote(`${TEXT}\n${bad}`, [peter]);
    expect(result).toMatchObject({ ok: false, reason: 'bad_signature' });
    expect(!result.ok && result.detail).toBe('invalid signature for key PeterNeumann+c74f20a3');
    // A bad signature sinks the note even when another known signature verifies.
    expect(verifyNote(`${TEXT}\n${PETER_SIG}${bad}`, [peter])).toMatchObject({
      ok: false,
      reason: 'bad_signature',
    });
  });

  it('reports identical duplicate signatures once', () => {
    const result = verifyNote(`${TEXT}\n${PETER_SIG}${PETER_SIG}${ENOCH_SIG}`, [
      parseVerifierKey(PETER_VERIFIER),
    ]);
    expect(result.ok && result.signatures.length).toBe(2);
  });

  it.each([
    ['no signature block', TEXT],
    ['a blank line and no signatures', `${TEXT}\n`],
    ['no final newline', `${TEXT}\n${PETER_SIG.slice(0, -1)}`],
    ['a control character', `\u0001${TEXT}\n${PETER_SIG}`],
    [
      'a name with a space',
      `${TEXT}\n— Bad Name x08go/ZJkuBS9UG/SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1FFYC2pZSNXgKvqfqdngotpRZb6KE6RyyBwJnAM=\n`,
    ],
    ['an unexpected line', `${TEXT}\n${PETER_SIG}Unexpected line.\n`],
    ['bad base64', `${TEXT}\n— PeterNeumann x08go/ZJkuBS9UG!!\n`],
    ['a short signature', `${TEXT}\n— PeterNeumann AAAA\n`],
    ['a lone surrogate', `\ud800${TEXT}\n${PETER_SIG}`],
    [
      'too many signatures',
      `${TEXT}\n${Array.from({ length: MAX_NOTE_SIGNATURES + 1 }, (_, i) => `— k${i} AAAAAAA=\n`).join('')}`,
    ],
  ])('rejects a malformed note: %s', (_, note) => {
    const result = verifyNote(note, [parseVerifierKey(PETER_VERIFIER)]);
    expect(result).toMatchObject({ ok: false, reason: 'malformed', signatures: [] });
  });

  it('rejects bytes that are not UTF-8 and accepts the same note as bytes', () => {
    const peter = parseVerifierKey(PETER_VERIFIER);
    const bytes = Buffer.from(`${TEXT}\n${PETER_SIG}`, 'utf8');
    expect(verifyNote(bytes, [peter]).ok).toBe(true);
    expect(verifyNote(Buffer.concat([Buffer.of(0xff), bytes]), [peter])).toMatchObject({
      reason: 'malformed',
    });
  });

  it('refuses every mangling of a verifier key (as the Go tests do)', () => {
    const bad = (key: string): boolean => {
      try {
        parseVerifierKey(key);
        return false;
      } catch (error) {
        return error instanceof SwitchboardError && error.code === 'SB_CONFIG_INVALID';
      }
    };
    for (let i = 0; i <= PETER_VERIFIER.length; i++) {
      for (let j = i + 1; j <= PETER_VERIFIER.length; j++) {
        if (i !== 0 || j !== PETER_VERIFIER.length) expect(bad(PETER_VERIFIER.slice(i, j))).toBe(true);
      }
    }
    for (let i = 0; i < PETER_VERIFIER.length; i++) {
      const mangled =
        PETER_VERIFIER.slice(0, i) +
        String.fromCharCode(PETER_VERIFIER.charCodeAt(i) + 1) +
        PETER_VERIFIER.slice(i + 1);
      expect(bad(mangled)).toBe(true);
    }
    // Wrong key length and unknown algorithm, each with a matching key id (from the Go tests).
    expect(bad('PeterNeumann+cc469956+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TWBADKEY==')).toBe(true);
    expect(bad('PeterNeumann+173116ae+ZRpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW')).toBe(true);
  });

  it('refuses manglings of a signer key', () => {
    const bad = (key: string): boolean => {
      try {
        parseSignerKey(key);
        return false;
      } catch (error) {
        return error instanceof SwitchboardError && error.code === 'SB_CONFIG_INVALID';
      }
    };
    for (let i = 0; i < PETER_SIGNER.length; i++) {
      expect(bad(PETER_SIGNER.slice(0, i))).toBe(true);
      expect(bad(PETER_SIGNER.slice(i + 1))).toBe(true);
      const mangled =
        PETER_SIGNER.slice(0, i) +
        String.fromCharCode(PETER_SIGNER.charCodeAt(i) + 1) +
        PETER_SIGNER.slice(i + 1);
      expect(bad(mangled)).toBe(true);
    }
  });

  it('verifies a real sum.golang.org checkpoint', () => {
    const result = verifyNote(SUMDB_NOTE, [parseVerifierKey(SUMDB_VERIFIER)]);
    expect(result).toMatchObject({
      ok: true,
      text: 'go.sum database tree\n63512409\nF7eHRPqN/cqPtqti14NKdGGaI1Giw8coWP3KxihFZbg=\n',
    });
    const tampered = SUMDB_NOTE.replace('63512409', '63512408');
    expect(verifyNote(tampered, [parseVerifierKey(SUMDB_VERIFIER)])).toMatchObject({
      ok: false,
      reason: 'bad_signature',
    });
  });
});

describe('keys', () => {
  it.each(Array.from({ length: 20 }, (_, i) => i))('generates keys whose parts belong together (%i)', () => {
    const { signerKey, verifierKey } = generateNoteKey('switchboard.example/audit');
    expect(signerKey).toMatch(/^PRIVATE\+KEY\+switchboard\.example\/audit\+[0-9a-f]{8}\+A[A-Za-z0-9+/]{43}$/);
    expect(verifierKey).toMatch(/^switchboard\.example\/audit\+[0-9a-f]{8}\+A[A-Za-z0-9+/]{43}$/);
    const signer = parseSignerKey(`${signerKey}\n`);
    const verifier = parseVerifierKey(`${verifierKey}\r\n`);
    expect(signer.verifierKey).toBe(verifierKey);
    expect(signer.keyId).toBe(verifier.keyId);
    // The base64 part may itself contain '+'.
    const publicKey = Buffer.from(verifierKey.split('+').slice(2).join('+'), 'base64').subarray(1);
    expect(noteKeyId('switchboard.example/audit', publicKey)).toBe(verifier.keyId);
    expect(encodeVerifierKey('switchboard.example/audit', publicKey)).toBe(verifierKey);
  });

  it('validates key names', () => {
    expect(isValidKeyName('example.com/log42')).toBe(true);
    for (const name of [
      '',
      'a b',
      'a+b',
      'a\u00a0b',
      'a\u0085b',
      'a\u2028b',
      'a\tb',
      'a\u0000b',
      'a\ud800',
    ]) {
      expect(isValidKeyName(name)).toBe(false);
    }
    expect(() => generateNoteKey('bad name')).toThrow(SwitchboardError);
    expect(() => encodeVerifierKey('ok', new Uint8Array(31))).toThrow(/32 bytes/);
  });
});

describe('signing and verifying', () => {
  const a = generateNoteKey('log.example/a');
  const b = generateNoteKey('log.example/b');
  const signerA = parseSignerKey(a.signerKey);
  const text = 'log.example/a\n3\nAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n';

  it('round-trips, with several signers', () => {
    const note = signNote(text, [signerA, parseSignerKey(b.signerKey)]);
    const result = verifyNote(note, [parseVerifierKey(a.verifierKey), parseVerifierKey(b.verifierKey)]);
    expect(result).toMatchObject({ ok: true, text });
    expect(result.signatures.map((s) => s.status)).toEqual(['verified', 'verified']);
  });

  it('keeps blank lines inside the text', () => {
    const withBlank = 'first\n\nsecond\n\n';
    const result = verifyNote(signNote(withBlank, signerA), [parseVerifierKey(a.verifierKey)]);
    expect(result).toMatchObject({ ok: true, text: withBlank });
  });

  it('does not verify a note signed by one key with another', () => {
    const note = signNote(text, signerA);
    expect(verifyNote(note, [parseVerifierKey(b.verifierKey)])).toMatchObject({
      ok: false,
      reason: 'unknown_key',
    });
    // An impostor verifier claiming A's name and key id but holding B's key: a bad signature.
    const realB = parseVerifierKey(b.verifierKey);
    const impostor: NoteVerifier = {
      name: signerA.name,
      keyId: signerA.keyId,
      verifierKey: 'impostor',
      verify: (message, signature) => realB.verify(message, signature),
    };
    expect(verifyNote(note, [impostor])).toMatchObject({ ok: false, reason: 'bad_signature' });
  });

  it('does not verify a tampered body', () => {
    const note = signNote(text, signerA);
    const tampered = note.replace('\n3\n', '\n4\n');
    expect(verifyNote(tampered, [parseVerifierKey(a.verifierKey)])).toMatchObject({
      ok: false,
      reason: 'bad_signature',
      signatures: [{ name: 'log.example/a', keyId: signerA.keyId, status: 'bad_signature' }],
    });
  });

  it('reports two different verifiers for one name and key id as ambiguous', () => {
    const note = signNote(text, signerA);
    const real = parseVerifierKey(a.verifierKey);
    const twin: NoteVerifier = { ...real, verifierKey: `${real.verifierKey}-twin` };
    expect(verifyNote(note, [real, twin])).toMatchObject({ ok: false, reason: 'ambiguous_key' });
    expect(verifyNote(note, [real, real]).ok).toBe(true);
  });

  it('refuses to sign what is not a note text', () => {
    expect(() => signNote('no newline', signerA)).toThrow(/end with a newline/);
    expect(() => signNote('tab\there\n', signerA)).toThrow(/control/);
    expect(() => signNote('\ud800\n', signerA)).toThrow(/Unicode/);
    expect(() => signNote(text, [])).toThrow(/no signer/);
  });

  it('never throws on hostile verifiers', () => {
    const throwing: NoteVerifier = {
      name: signerA.name,
      keyId: signerA.keyId,
      verifierKey: 'x',
      verify: () => {
        throw new Error('boom');
      },
    };
    expect(verifyNote(signNote(text, signerA), [throwing])).toMatchObject({
      ok: false,
      reason: 'bad_signature',
    });
  });
});
