/**
 * The `requestState` the gateway hands a 2026-07-28 client when it turns a legacy upstream's
 * server->client request into an input-required result (MRTR). The client echoes it on its retry;
 * it is attacker-controlled input, so it is sealed with an HMAC and bound to the principal, the
 * call (method and name) and an expiry, as the specification asks. Tokens are recognisable by
 * their prefix, so an upstream's own `requestState` (a modern upstream's) passes through untouched.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

const PREFIX = 'sbrs1.';

export interface RequestStateClaims {
  /** The parked call this state resumes. */
  readonly call: string;
  readonly principal: string;
  readonly method: string;
  readonly name: string;
  /** Epoch ms after which the state is refused. */
  readonly exp: number;
}

export type OpenedState =
  | { readonly ok: true; readonly call: string }
  | { readonly ok: false; readonly reason: string };

export class RequestStateCodec {
  readonly #key: Buffer;

  constructor(key: Buffer = randomBytes(32)) {
    this.#key = key;
  }

  /** Whether a `requestState` is one of the gateway's (else it belongs to the upstream). */
  static isOurs(state: string): boolean {
    return state.startsWith(PREFIX);
  }

  seal(claims: RequestStateClaims): string {
    const body = Buffer.from(JSON.stringify(claims), 'utf8').toString('base64url');
    return `${PREFIX}${body}.${this.#mac(body)}`;
  }

  /** Checks a state the client sent back against the retry it came with. */
  open(
    state: string,
    expect: {
      readonly principal: string;
      readonly method: string;
      readonly name: string;
      readonly now: number;
    },
  ): OpenedState {
    if (!state.startsWith(PREFIX) || state.length > 4096)
      return { ok: false, reason: 'not a request state of this gateway' };
    const [body, mac] = state.slice(PREFIX.length).split('.');
    if (!body || !mac) return { ok: false, reason: 'malformed request state' };
    const expected = Buffer.from(this.#mac(body));
    const given = Buffer.from(mac);
    if (expected.length !== given.length || !timingSafeEqual(expected, given))
      return { ok: false, reason: 'request state failed verification' };
    let claims: Partial<RequestStateClaims>;
    try {
      claims = JSON.parse(Buffer.from(body, 'base64url').toString('utf8')) as Partial<RequestStateClaims>;
    } catch {
      return { ok: false, reason: 'malformed request state' };
    }
    if (claims.principal !== expect.principal)
      return { ok: false, reason: 'request state belongs to another principal' };
    if (claims.method !== expect.method || claims.name !== expect.name)
      return { ok: false, reason: 'request state belongs to another request' };
    if (typeof claims.exp !== 'number' || claims.exp < expect.now)
      return { ok: false, reason: 'request state expired' };
    if (typeof claims.call !== 'string') return { ok: false, reason: 'malformed request state' };
    return { ok: true, call: claims.call };
  }

  #mac(body: string): string {
    return createHmac('sha256', this.#key).update(PREFIX).update(body).digest('base64url');
  }
}
