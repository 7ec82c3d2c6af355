/**
 * C2SP signed notes (https://c2sp.org/signed-note) with Ed25519 (signature type 0x01), the
 * envelope of the ledger's checkpoints. A note is a text ending in a newline, a blank line, then
 * one line per signature: `— <key name> base64(4-byte key id || 64-byte signature)`.
 *
 * Key strings use the formats of Go's golang.org/x/mod/sumdb/note, so keys interoperate with the Go
 * tooling (and its test vectors apply):
 *
 * - verifier (public) key: `<name>+<key id, 8 hex digits>+<base64(0x01 || 32-byte public key)>`;
 * - signer (private) key, the content of the key file:
 *   `PRIVATE+KEY+<name>+<key id>+<base64(0x01 || 32-byte Ed25519 seed)>`.
 *
 * The key id is the first four bytes, big-endian, of SHA-256(name || 0x0A || 0x01 || public key).
 * Both parsers recompute it, so a key string whose parts do not belong together is refused.
 *
 * Verification never throws: {@link verifyNote} says which signatures verified and why the note
 * was refused. Following the spec, signatures from unknown keys are ignored, a failing signature
 * from a known key rejects the whole note, and a note needs at least one verified signature.
 */
import {
  createHash,
  createPrivateKey,
  createPublicKey,
  generateKeyPairSync,
  type KeyObject,
  sign,
  verify,
} from 'node:crypto';
import { SbErrorCode, SwitchboardError } from '../errors/switchboard-error.js';
import { decodeBase64Strict } from './strict-base64.js';
import { isWellFormedString } from './well-formed-string.js';

/** The signed-note signature type byte of Ed25519. */
const ED25519 = 0x01;
const SIGNER_PREFIX = 'PRIVATE+KEY+';
const PKCS8_ED25519_PREFIX = Buffer.from('302e020100300506032b657004220420', 'hex');
const SPKI_ED25519_PREFIX = Buffer.from('302a300506032b6570032100', 'hex');
const SIGNATURE_PREFIX = '\u2014 ';
// biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is the point.
const CONTROL_EXCEPT_NEWLINE = /[\u0000-\u0009\u000b-\u001f]/;
// biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is the point.
const KEY_NAME_FORBIDDEN = /[\s\u0085+\u0000-\u001f\u007f]/u;

/** Signatures beyond this many make a note malformed (the spec requires accepting at least 16). */
export const MAX_NOTE_SIGNATURES = 100;

/** Something that signs note texts under a key name and id. */
export interface NoteSigner {
  /** The key name written in signature lines (conventionally the log origin). */
  readonly name: string;
  /** The 32-bit key id prefixed to each signature. */
  readonly keyId: number;
  /** The matching verifier key string, for publishing (e.g. in the ledger's session header). */
  readonly verifierKey: string;
  /** The raw Ed25519 signature (64 bytes) of `message`. */
  sign(message: Uint8Array): Uint8Array;
}

/** Something that checks signatures made under one key name and id. */
export interface NoteVerifier {
  readonly name: string;
  readonly keyId: number;
  /** The verifier key string this verifier was parsed from. */
  readonly verifierKey: string;
  /** Whether `signature` (without the key id prefix) is valid for `message`. Never throws. */
  verify(message: Uint8Array, signature: Uint8Array): boolean;
}

/** A freshly generated key, as the two strings to store: the signer key is secret. */
export interface NoteKeyPair {
  readonly signerKey: string;
  readonly verifierKey: string;
}

/** What happened to one signature line of a note. */
export type NoteSignatureStatus = 'verified' | 'unknown_key' | 'bad_signature' | 'ambiguous_key';

/** One signature line of a note and its outcome. */
export interface NoteSignatureCheck {
  readonly name: string;
  readonly keyId: number;
  readonly status: NoteSignatureStatus;
}

/**
 * Why a note was refused:
 * - `malformed`: not a signed note at all (no signature block, a control character, bad base64...);
 * - `bad_signature`: a signature from a known key failed (the whole note is then rejected);
 * - `ambiguous_key`: two different configured verifiers share the signature's name and key id;
 * - `unknown_key`: well-formed, but no signature is from a configured key.
 */
export type NoteFailureReason = 'malformed' | 'bad_signature' | 'ambiguous_key' | 'unknown_key';

/**
 * The outcome of {@link verifyNote}. `text` (the signed text, final newline included) is only
 * given when the note verified: the spec says an unverified text must be ignored.
 */
export type NoteVerification =
  | { readonly ok: true; readonly text: string; readonly signatures: readonly NoteSignatureCheck[] }
  | {
      readonly ok: false;
      readonly reason: NoteFailureReason;
      /** One sentence for humans. */
      readonly detail: string;
      /** Every signature line and its status; empty when the note is malformed. */
      readonly signatures: readonly NoteSignatureCheck[];
    };

function configError(message: string): SwitchboardError {
  return new SwitchboardError(SbErrorCode.ConfigInvalid, message);
}

/**
 * Whether `name` may be a key name: non-empty, well-formed, no Unicode space, no `+`, no control
 * character (Go's `unicode.IsSpace` set, plus U+FEFF, which JavaScript counts as a space).
 */
export function isValidKeyName(name: string): boolean {
  return name.length > 0 && isWellFormedString(name) && !KEY_NAME_FORBIDDEN.test(name);
}

/** The signed-note key id of an Ed25519 public key: SHA-256(name || "\n" || 0x01 || key)[:4]. */
export function noteKeyId(name: string, publicKey: Uint8Array): number {
  const digest = createHash('sha256')
    .update(name, 'utf8')
    .update(Buffer.of(0x0a, ED25519))
    .update(publicKey)
    .digest();
  return digest.readUInt32BE(0);
}

function hex8(keyId: number): string {
  return keyId.toString(16).padStart(8, '0');
}

function rawPublicKey(key: KeyObject): Buffer {
  return key.export({ format: 'der', type: 'spki' }).subarray(SPKI_ED25519_PREFIX.length);
}

/**
 * The verifier key string `<name>+<key id>+<base64(0x01 || publicKey)>` of a 32-byte Ed25519
 * public key.
 *
 * @throws SwitchboardError `SB_CONFIG_INVALID` for an invalid name or a key that is not 32 bytes.
 */
export function encodeVerifierKey(name: string, publicKey: Uint8Array): string {
  if (!isValidKeyName(name)) throw configError(`Invalid signed-note key name ${JSON.stringify(name)}`);
  if (publicKey.length !== 32) throw configError('An Ed25519 public key is 32 bytes');
  const material = Buffer.concat([Buffer.of(ED25519), publicKey]).toString('base64');
  return `${name}+${hex8(noteKeyId(name, publicKey))}+${material}`;
}

/**
 * A new Ed25519 key named `name`, as its signer key (secret: store it mode 0600) and its verifier
 * key (public: give it to whoever verifies checkpoints).
 *
 * @throws SwitchboardError `SB_CONFIG_INVALID` for an invalid key name.
 */
export function generateNoteKey(name: string): NoteKeyPair {
  if (!isValidKeyName(name)) throw configError(`Invalid signed-note key name ${JSON.stringify(name)}`);
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  const seed = privateKey.export({ format: 'der', type: 'pkcs8' }).subarray(PKCS8_ED25519_PREFIX.length);
  const pub = rawPublicKey(publicKey);
  const id = hex8(noteKeyId(name, pub));
  const signerKey = `${SIGNER_PREFIX}${name}+${id}+${Buffer.concat([Buffer.of(ED25519), seed]).toString('base64')}`;
  return { signerKey, verifierKey: encodeVerifierKey(name, pub) };
}

/** Splits `<name>+<8 hex>+<base64>`; the base64 part may itself contain `+`. */
function splitKey(text: string): { name: string; keyId: number; material: Buffer } | undefined {
  const first = text.indexOf('+');
  const second = text.indexOf('+', first + 1);
  if (first < 0 || second < 0) return undefined;
  const name = text.slice(0, first);
  const id = text.slice(first + 1, second);
  if (!isValidKeyName(name) || !/^[0-9a-f]{8}$/.test(id)) return undefined;
  const material = decodeBase64Strict(text.slice(second + 1));
  if (material === undefined || material.length !== 33 || material[0] !== ED25519) return undefined;
  return { name, keyId: Number.parseInt(id, 16), material: material.subarray(1) };
}

/** Removes one trailing newline, as a key file written by an editor has. */
function chompNewline(text: string): string {
  if (text.endsWith('\r\n')) return text.slice(0, -2);
  return text.endsWith('\n') ? text.slice(0, -1) : text;
}

/**
 * A verifier from a verifier key string (a single trailing newline is allowed, as in a file).
 *
 * @throws SwitchboardError `SB_CONFIG_INVALID` when the string is malformed, the algorithm is not
 *   Ed25519, or the key id does not match the name and key.
 */
export function parseVerifierKey(verifierKey: string): NoteVerifier {
  const text = chompNewline(verifierKey);
  const parts = splitKey(text);
  if (parts === undefined || noteKeyId(parts.name, parts.material) !== parts.keyId) {
    throw configError('Malformed signed-note verifier key (expected <name>+<key id>+<base64 Ed25519 key>)');
  }
  let key: KeyObject;
  try {
    key = createPublicKey({
      key: Buffer.concat([SPKI_ED25519_PREFIX, parts.material]),
      format: 'der',
      type: 'spki',
    });
  } catch (error) {
    throw new SwitchboardError(SbErrorCode.ConfigInvalid, 'Invalid Ed25519 public key in verifier key', {
      cause: error,
    });
  }
  return {
    name: parts.name,
    keyId: parts.keyId,
    verifierKey: text,
    verify(message: Uint8Array, signature: Uint8Array): boolean {
      if (signature.length !== 64) return false;
      try {
        return verify(null, message, key, signature);
      } catch {
        return false;
      }
    },
  };
}

/**
 * A signer from a signer key string (the key file's content; one trailing newline is allowed).
 *
 * @throws SwitchboardError `SB_CONFIG_INVALID` when the string is malformed or its key id does not
 *   match the name and the public key derived from the seed.
 */
export function parseSignerKey(signerKey: string): NoteSigner {
  const text = chompNewline(signerKey);
  const malformed = configError(
    'Malformed signed-note signer key (expected PRIVATE+KEY+<name>+<key id>+<base64 Ed25519 seed>)',
  );
  if (!text.startsWith(SIGNER_PREFIX)) throw malformed;
  const parts = splitKey(text.slice(SIGNER_PREFIX.length));
  if (parts === undefined) throw malformed;
  const privateKey = createPrivateKey({
    key: Buffer.concat([PKCS8_ED25519_PREFIX, parts.material]),
    format: 'der',
    type: 'pkcs8',
  });
  const publicKey = rawPublicKey(createPublicKey(privateKey));
  if (noteKeyId(parts.name, publicKey) !== parts.keyId) throw malformed;
  return {
    name: parts.name,
    keyId: parts.keyId,
    verifierKey: encodeVerifierKey(parts.name, publicKey),
    sign(message: Uint8Array): Uint8Array {
      return sign(null, message, privateKey);
    },
  };
}

/** Why `text` cannot be a note text, or undefined when it can. */
function textProblem(text: string): string | undefined {
  if (!text.endsWith('\n')) return 'a note text must end with a newline';
  if (!isWellFormedString(text)) return 'a note text must be valid Unicode';
  if (CONTROL_EXCEPT_NEWLINE.test(text)) return 'a note text must not contain control characters';
  return undefined;
}

/**
 * The signed note of `text` (which must end in a newline and hold no control character other than
 * newline) with one signature line per signer, in the order given.
 *
 * @throws SwitchboardError `SB_INTERNAL` for an invalid text, no signer, or an invalid signer name.
 */
export function signNote(text: string, signers: NoteSigner | readonly NoteSigner[]): string {
  const list: readonly NoteSigner[] = Array.isArray(signers) ? signers : [signers as NoteSigner];
  const problem = textProblem(text);
  if (problem !== undefined) throw new SwitchboardError(SbErrorCode.Internal, `Cannot sign note: ${problem}`);
  if (list.length === 0) throw new SwitchboardError(SbErrorCode.Internal, 'Cannot sign note: no signer');
  const message = Buffer.from(text, 'utf8');
  let out = `${text}\n`;
  for (const signer of list) {
    if (!isValidKeyName(signer.name)) {
      throw new SwitchboardError(
        SbErrorCode.Internal,
        `Cannot sign note: invalid key name ${JSON.stringify(signer.name)}`,
      );
    }
    const id = Buffer.alloc(4);
    id.writeUInt32BE(signer.keyId >>> 0);
    const signature = Buffer.concat([id, signer.sign(message)]).toString('base64');
    out += `${SIGNATURE_PREFIX}${signer.name} ${signature}\n`;
  }
  return out;
}

interface SignatureLine {
  readonly name: string;
  readonly keyId: number;
  readonly signature: Buffer;
}

function refuse(
  reason: NoteFailureReason,
  detail: string,
  signatures: readonly NoteSignatureCheck[] = [],
): NoteVerification {
  return { ok: false, reason, detail, signatures };
}

/** A verifier that throws (a custom implementation) counts as a failed signature, not a crash. */
function safeVerify(verifier: NoteVerifier, message: Uint8Array, signature: Uint8Array): boolean {
  try {
    return verifier.verify(message, signature) === true;
  } catch {
    return false;
  }
}

function decodeNote(note: string | Uint8Array): string | undefined {
  if (typeof note === 'string') return isWellFormedString(note) ? note : undefined;
  try {
    return new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(note);
  } catch {
    return undefined;
  }
}

/**
 * Opens a signed note against the trusted `verifiers`. Never throws; see {@link NoteVerification}.
 * Identical duplicate signature lines are reported once. A string note must be well-formed; a byte
 * note must be valid UTF-8.
 */
export function verifyNote(note: string | Uint8Array, verifiers: readonly NoteVerifier[]): NoteVerification {
  try {
    const text = decodeNote(note);
    if (text === undefined) {
      return refuse('malformed', 'the note is not valid UTF-8 (or has a lone surrogate)');
    }
    const split = text.lastIndexOf('\n\n');
    if (split < 0) return refuse('malformed', 'the note has no blank line before its signatures');
    const body = text.slice(0, split + 1);
    const block = text.slice(split + 2);
    const problem = textProblem(body);
    if (problem !== undefined) return refuse('malformed', problem);
    if (block === '' || !block.endsWith('\n')) return refuse('malformed', 'the note has no signature lines');
    if (CONTROL_EXCEPT_NEWLINE.test(block)) {
      return refuse('malformed', 'a signature line contains a control character');
    }
    const lines: SignatureLine[] = [];
    const seen = new Set<string>();
    for (const line of block.slice(0, -1).split('\n')) {
      if (!line.startsWith(SIGNATURE_PREFIX)) {
        return refuse('malformed', 'a signature line must start with "— "');
      }
      const rest = line.slice(SIGNATURE_PREFIX.length);
      const space = rest.indexOf(' ');
      const name = space < 0 ? '' : rest.slice(0, space);
      const bytes = space < 0 ? undefined : decodeBase64Strict(rest.slice(space + 1));
      if (!isValidKeyName(name) || bytes === undefined || bytes.length < 5) {
        return refuse('malformed', 'a signature line is not "— <name> <base64 signature>"');
      }
      if (seen.has(line)) continue;
      seen.add(line);
      lines.push({ name, keyId: bytes.readUInt32BE(0), signature: bytes.subarray(4) });
      if (lines.length > MAX_NOTE_SIGNATURES) {
        return refuse('malformed', `the note has more than ${MAX_NOTE_SIGNATURES} signatures`);
      }
    }
    const message = Buffer.from(body, 'utf8');
    const checks: NoteSignatureCheck[] = lines.map((sig) => {
      const matching = verifiers.filter((v) => v.name === sig.name && v.keyId === sig.keyId);
      const distinct = new Set(matching.map((v) => v.verifierKey));
      let status: NoteSignatureStatus;
      if (matching.length === 0) status = 'unknown_key';
      else if (distinct.size > 1) status = 'ambiguous_key';
      else if (safeVerify(matching[0] as NoteVerifier, message, sig.signature)) status = 'verified';
      else status = 'bad_signature';
      return { name: sig.name, keyId: sig.keyId, status };
    });
    const describe = (check: NoteSignatureCheck): string => `${check.name}+${hex8(check.keyId)}`;
    const bad = checks.find((check) => check.status === 'bad_signature');
    if (bad !== undefined) {
      return refuse('bad_signature', `invalid signature for key ${describe(bad)}`, checks);
    }
    const ambiguous = checks.find((check) => check.status === 'ambiguous_key');
    if (ambiguous !== undefined) {
      return refuse('ambiguous_key', `several verifiers share key ${describe(ambiguous)}`, checks);
    }
    if (!checks.some((check) => check.status === 'verified')) {
      return refuse('unknown_key', 'no signature is from a trusted key', checks);
    }
    return { ok: true, text: body, signatures: checks };
  } catch (error) {
    return refuse('malformed', `the note could not be read: ${String(error)}`);
  }
}
