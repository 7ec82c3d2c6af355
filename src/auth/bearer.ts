/**
 * Reading `Authorization: Bearer <token>` (RFC 6750 §2.1) from an HTTP request, strictly and
 * without ever throwing: the value comes from anyone who can reach the port. The result says what
 * was wrong in words a client can act on; it never contains the token of a rejected request.
 *
 * Only the header is read. Tokens in the query string (`?access_token=`) or in a form body are
 * never accepted: URLs end up in proxy logs, browser history and Referer headers.
 */

/** The longest `Authorization` value read (characters). Larger JWTs are unusual; larger is abuse. */
export const MAX_AUTHORIZATION_LENGTH = 8192;

/** RFC 6750 `b64token`: the characters a bearer token may hold (base64, base64url and a few more). */
const B64TOKEN = /^[A-Za-z0-9\-._~+/]+=*$/;
/** An RFC 7230 `token`, as an auth-scheme name is; bounded so the name is safe to repeat back. */
const SCHEME = /^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,32}$/;

/** What the `Authorization` headers of a request hold. */
export type BearerResult =
  /** One well-formed bearer token. */
  | { readonly kind: 'token'; readonly token: string }
  /** No `Authorization` header at all. */
  | { readonly kind: 'missing' }
  /** Another scheme (`Basic`, `Digest`...): a client that does not know it needs a bearer token. */
  | { readonly kind: 'other-scheme'; readonly scheme: string }
  /** A bearer attempt that cannot be used; `problem` is a phrase for the client. */
  | { readonly kind: 'malformed'; readonly problem: string };

/** Whether `token` has the syntax of a bearer token (RFC 6750 `b64token`), so a header can carry it. */
export function isBearerTokenSyntax(token: string): boolean {
  return token.length > 0 && token.length <= MAX_AUTHORIZATION_LENGTH && B64TOKEN.test(token);
}

function isSpace(code: number): boolean {
  return code === 0x20 || code === 0x09;
}

/**
 * Parses one `Authorization` value: the scheme (case-insensitive), one or more spaces, the token.
 * Surrounding spaces and tabs are ignored. Total: any string gives a result, never an exception.
 */
export function parseAuthorization(value: string): BearerResult {
  if (value.length > MAX_AUTHORIZATION_LENGTH) {
    return {
      kind: 'malformed',
      problem: `the Authorization header is longer than ${MAX_AUTHORIZATION_LENGTH} characters`,
    };
  }
  let start = 0;
  let end = value.length;
  while (start < end && isSpace(value.charCodeAt(start))) start++;
  while (end > start && isSpace(value.charCodeAt(end - 1))) end--;
  if (start === end) return { kind: 'malformed', problem: 'the Authorization header is empty' };
  let schemeEnd = start;
  while (schemeEnd < end && !isSpace(value.charCodeAt(schemeEnd))) schemeEnd++;
  const scheme = value.slice(start, schemeEnd);
  if (scheme.toLowerCase() !== 'bearer') {
    return SCHEME.test(scheme)
      ? { kind: 'other-scheme', scheme }
      : { kind: 'malformed', problem: 'the Authorization header does not start with an auth scheme' };
  }
  let tokenStart = schemeEnd;
  while (tokenStart < end && isSpace(value.charCodeAt(tokenStart))) tokenStart++;
  const token = value.slice(tokenStart, end);
  if (token === '') return { kind: 'malformed', problem: 'the bearer token is empty' };
  if (!B64TOKEN.test(token)) {
    return {
      kind: 'malformed',
      problem: 'the bearer token holds characters a bearer token cannot (spaces, commas, quotes...)',
    };
  }
  return { kind: 'token', token };
}

/**
 * Reads the bearer token of a request from its raw headers (`IncomingMessage.rawHeaders`: name,
 * value, name, value...). Raw headers, because Node keeps only the first of several
 * `Authorization` headers in `req.headers`, and a request carrying two is ambiguous: it is refused
 * rather than guessing which one the client meant.
 */
export function readBearer(rawHeaders: readonly string[]): BearerResult {
  let found: string | undefined;
  let count = 0;
  for (let i = 0; i + 1 < rawHeaders.length; i += 2) {
    const name = rawHeaders[i];
    if (name !== undefined && name.length === 13 && name.toLowerCase() === 'authorization') {
      count++;
      found = rawHeaders[i + 1];
    }
  }
  if (count === 0 || found === undefined) return { kind: 'missing' };
  if (count > 1) return { kind: 'malformed', problem: `the request has ${count} Authorization headers` };
  return parseAuthorization(found);
}
