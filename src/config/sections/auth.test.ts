// biome-ignore-all lint/suspicious/noTemplateCurlyInString: these tests write ${env:NAME} references.
import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { jwksSource } from '../../auth/jwt-authenticator.js';
import type { GatewayConfig, JwtConfig } from '../types.js';
import { type ConfigIssue, describeValue, type ValidateOptions, validateConfig } from '../validate.js';

const BASE: ValidateOptions = { baseDir: '/etc/switchboard', env: {} };
const MINIMAL = { upstreams: { everything: { command: 'npx' } } };

function valid(
  raw: unknown,
  options: Partial<ValidateOptions> = {},
): { config: GatewayConfig; warnings: string[] } {
  const result = validateConfig(raw, { ...BASE, ...options });
  if (!result.ok)
    throw new Error(`expected a valid configuration, got:\n${JSON.stringify(result.errors, null, 2)}`);
  return result;
}

function invalid(raw: unknown, options: Partial<ValidateOptions> = {}): ConfigIssue[] {
  const result = validateConfig(raw, { ...BASE, ...options });
  if (result.ok) throw new Error('expected issues, the configuration is valid');
  return result.errors;
}

/** The one issue of `raw`, which must have exactly one. */
function issue(raw: unknown, options: Partial<ValidateOptions> = {}): ConfigIssue {
  const errors = invalid(raw, options);
  expect(errors).toHaveLength(1);
  return errors[0]!;
}

const sha = (token: string) => createHash('sha256').update(token).digest('hex');
const ALICE = sha('sbt_alice');
const BOB = sha('sbt_bob');
const withAuth = (auth: unknown, extra: Record<string, unknown> = {}) => ({ ...MINIMAL, ...extra, auth });
const tokens = (...entries: unknown[]) => withAuth({ tokens: entries });
const alice = (over: Record<string, unknown> = {}) => ({ principal: 'alice', sha256: ALICE, ...over });
const JWT = { jwks: 'https://idp.example.com/jwks.json', issuer: 'https://idp.example.com', audience: 'mcp' };
const jwt = (over: Record<string, unknown> = {}) => withAuth({ jwt: { ...JWT, ...over } });
const jwtOf = (raw: unknown, options: Partial<ValidateOptions> = {}): JwtConfig => {
  const { auth } = valid(raw, options).config;
  if (auth?.jwt === undefined) throw new Error('no jwt in the configuration');
  return auth.jwt;
};

const NAME_EXPECTED = 'a name of letters, digits and . _ @ : - (at most 128 characters)';
const SHA256_EXPECTED = 'the sha256 of the token, 64 hex digits (switchboard auth token prints it)';
const TOKEN_EXPECTED =
  'a map with principal, sha256 and roles (sha256 is the hash of the token, never the token)';
const NEITHER_EXPECTED =
  'at least one way to authenticate: tokens, jwt, or both (remove the section for no authentication)';
const JWKS_EXPECTED =
  'a JWKS URL (https://..., or http:// on localhost), a file: URL, or the path of a file holding a JWKS (relative to the configuration file)';
const AUDIENCE_EXPECTED = 'the expected "aud" of tokens: a non-empty string or a list of them';
const LIST_EXPECTED = 'a list, e.g. [a, b] or one "- item" per line';
const LOOPBACK_EXPECTED =
  'a loopback address (127.0.0.1, ::1 or localhost): without authentication the gateway serves this machine only (configure auth to listen elsewhere)';

describe('auth absent', () => {
  it('means no authentication, lenient sessions, and loopback only', () => {
    const { config, warnings } = valid(MINIMAL);
    expect(config.auth).toBeUndefined();
    expect('auth' in config).toBe(false);
    expect(config.sessions.mode).toBe('lenient');
    expect(warnings).toEqual([]);
  });

  it.each(['127.0.0.1', '127.8.9.10', '::1', '[::1]', 'localhost', 'gw.localhost'])(
    'listens on the loopback host %j',
    (host) => {
      expect(valid({ ...MINIMAL, server: { host } }).config.server.host).toBe(host.replace(/^\[|\]$/g, ''));
    },
  );

  it.each(['0.0.0.0', '::', '192.168.1.10', 'gateway.internal', '128.0.0.1'])(
    'refuses to listen on %j without it',
    (host) => {
      expect(issue({ ...MINIMAL, server: { host } })).toEqual({
        path: 'server.host',
        found: JSON.stringify(host),
        expected: LOOPBACK_EXPECTED,
      });
    },
  );

  it('names the host as it came from the environment', () => {
    expect(issue({ ...MINIMAL, server: { host: '${env:HOST}' } }, { env: { HOST: '0.0.0.0' } })).toEqual({
      path: 'server.host',
      found: '"0.0.0.0"',
      expected: LOOPBACK_EXPECTED,
    });
  });
});

describe('auth present', () => {
  it('makes sessions strict by default and allows any host, without warnings', () => {
    for (const auth of [{ tokens: [alice()] }, { jwt: JWT }]) {
      const { config, warnings } = valid(withAuth(auth, { server: { host: '0.0.0.0' } }));
      expect(config.sessions.mode).toBe('strict');
      expect(config.server.host).toBe('0.0.0.0');
      expect(warnings).toEqual([]);
    }
  });

  it('keeps an explicit sessions mode, warning about lenient', () => {
    const lenient = valid(withAuth({ tokens: [alice()] }, { sessions: { mode: 'lenient' } }));
    expect(lenient.config.sessions.mode).toBe('lenient');
    expect(lenient.warnings).toEqual([
      'sessions.mode: lenient although authentication is configured: clients may pick their own session ids and send requests without one',
    ]);
    const strict = valid(withAuth({ tokens: [alice()] }, { sessions: { mode: 'strict' } }));
    expect(strict.warnings).toEqual([]);
  });

  it.each([
    ['an empty section', null, 'an empty section'],
    ['an empty map', {}, 'neither tokens nor jwt'],
    ['an empty token list', { tokens: [] }, 'an empty list of tokens and no jwt'],
  ])('refuses %s, which is not "no authentication"', (_name, auth, found) => {
    expect(issue(withAuth(auth))).toEqual({ path: 'auth', found, expected: NEITHER_EXPECTED });
  });

  it('still counts as configured when it is broken, so the host is not also reported', () => {
    expect(issue(withAuth(null, { server: { host: '0.0.0.0' } }))).toMatchObject({ path: 'auth' });
    expect(issue(withAuth('tokens', { server: { host: '0.0.0.0' } }))).toEqual({
      path: 'auth',
      found: '"tokens"',
      expected: 'a map with the keys tokens, jwt',
    });
  });

  it.each([
    ['token', 'tokens'],
    ['JWT', 'jwt'],
  ])('reports the unknown key %j, suggesting %j', (key, suggestion) => {
    expect(invalid(withAuth({ tokens: [alice()], [key]: [] }))).toEqual([
      {
        path: `auth.${key}`,
        found: 'an unknown key',
        expected: `one of the keys allowed in auth: tokens, jwt (did you mean "${suggestion}"?)`,
      },
    ]);
  });

  it('reports an unknown key without a near miss plainly', () => {
    expect(issue(withAuth({ tokens: [alice()], oidc: {} }))).toEqual({
      path: 'auth.oidc',
      found: 'an unknown key',
      expected: 'one of the keys allowed in auth: tokens, jwt',
    });
  });
});

describe('auth.tokens', () => {
  it('reads principals, hashes and roles, roles defaulting to none', () => {
    const { config } = valid(
      tokens(alice({ roles: ['approver', 'ops'] }), { principal: 'bob', sha256: BOB }),
    );
    expect(config.auth).toEqual({
      tokens: [
        { principal: 'alice', sha256: ALICE, roles: ['approver', 'ops'] },
        { principal: 'bob', sha256: BOB, roles: [] },
      ],
    });
  });

  it('stores an upper-case hash in lower case', () => {
    expect(valid(tokens(alice({ sha256: ALICE.toUpperCase() }))).config.auth?.tokens[0]?.sha256).toBe(ALICE);
  });

  it('reads values from the environment', () => {
    const env = { WHO: 'svc@build:1', HASH: ALICE, ROLE: 'approver' };
    const { config } = valid(
      tokens({ principal: '${env:WHO}', sha256: '${env:HASH}', roles: ['${env:ROLE}'] }),
      {
        env,
      },
    );
    expect(config.auth?.tokens).toEqual([{ principal: 'svc@build:1', sha256: ALICE, roles: ['approver'] }]);
  });

  it('allows several tokens for one principal', () => {
    expect(valid(tokens(alice(), alice({ sha256: BOB }))).config.auth?.tokens).toHaveLength(2);
  });

  it.each(['a', 'A.b_c@d:e-f', '0day', 'x'.repeat(128), 'svc@build:1'])('accepts the name %j', (name) => {
    const { config } = valid(tokens(alice({ principal: name, roles: [name] })));
    expect(config.auth?.tokens[0]).toMatchObject({ principal: name, roles: [name] });
  });

  it.each(['', '-alice', '.alice', 'a b', 'alice/x', 'x'.repeat(129), 'ünï', 'a\nb'])(
    'refuses the name %j as principal and as role',
    (name) => {
      expect(invalid(tokens(alice({ principal: name, roles: ['ok', name] })))).toEqual([
        {
          path: 'auth.tokens[0].principal',
          found: describeValue(name),
          expected: NAME_EXPECTED,
        },
        {
          path: 'auth.tokens[0].roles[1]',
          found: describeValue(name),
          expected: NAME_EXPECTED,
        },
      ]);
    },
  );

  it('refuses a principal or role that is not a string', () => {
    expect(invalid(tokens(alice({ principal: 42, roles: [true] })))).toEqual([
      { path: 'auth.tokens[0].principal', found: '42', expected: NAME_EXPECTED },
      { path: 'auth.tokens[0].roles[0]', found: 'true', expected: NAME_EXPECTED },
    ]);
  });

  it('refuses roles given as one string', () => {
    expect(issue(tokens(alice({ roles: 'approver' })))).toEqual({
      path: 'auth.tokens[0].roles',
      found: '"approver"',
      expected: LIST_EXPECTED,
    });
  });

  it('reports a missing principal once, as a missing key', () => {
    expect(issue(tokens({ sha256: ALICE }))).toEqual({
      path: 'auth.tokens[0].principal',
      found: 'nothing',
      expected: `who the token is: ${NAME_EXPECTED}`,
    });
  });

  it('reports a missing sha256', () => {
    expect(issue(tokens({ principal: 'alice' }))).toEqual({
      path: 'auth.tokens[0].sha256',
      found: 'nothing',
      expected: SHA256_EXPECTED,
    });
  });

  it('refuses a sha256 that is not a string', () => {
    expect(issue(tokens(alice({ sha256: ['x'] })))).toEqual({
      path: 'auth.tokens[0].sha256',
      found: 'a list of 1 item',
      expected: SHA256_EXPECTED,
    });
  });

  it('reports an unset variable in sha256', () => {
    expect(issue(tokens(alice({ sha256: '${env:HASH}' })))).toEqual({
      path: 'auth.tokens[0].sha256',
      found: '${env:HASH}, but HASH is not set',
      expected: 'the environment variable HASH to be set',
    });
  });

  it('refuses, without echoing it, any sha256 that is not 64 hex digits', () => {
    const notHex = fc.oneof(
      fc.string({ maxLength: 100 }),
      fc.stringMatching(/^[0-9a-fA-F]{0,63}$/),
      fc.stringMatching(/^[0-9a-fA-F]{65,80}$/),
      // 64 characters, one of them not a hex digit.
      fc
        .tuple(
          fc.stringMatching(/^[0-9a-f]{64}$/),
          fc.nat({ max: 63 }),
          fc.constantFrom('g', 'G', 'x', ' ', '-', 'é', '\n'),
        )
        .map(([hex, at, ch]) => `${hex.slice(0, at)}${ch}${hex.slice(at + 1)}`),
      fc.stringMatching(/^[0-9a-f]{64}$/).map((hex) => ` ${hex}`),
      fc.stringMatching(/^[0-9a-f]{64}$/).map((hex) => `${hex}  -`),
    );
    fc.assert(
      fc.property(
        notHex.filter((s) => !/^[0-9a-fA-F]{64}$/.test(s) && !s.includes('$')),
        (value) => {
          const found = issue(tokens(alice({ sha256: value })));
          expect(found).toEqual({
            path: 'auth.tokens[0].sha256',
            found: `a value of ${value.length} characters that is not 64 hex digits`,
            expected: `${SHA256_EXPECTED}, never the token itself`,
          });
        },
      ),
    );
  });

  it('accepts any 64 hex digits in any case, storing them in lower case', () => {
    fc.assert(
      fc.property(fc.stringMatching(/^[0-9a-fA-F]{64}$/), (hex) => {
        expect(valid(tokens(alice({ sha256: hex }))).config.auth?.tokens[0]?.sha256).toBe(hex.toLowerCase());
      }),
    );
  });

  it('refuses a token pasted as an entry without echoing it', () => {
    const token = 'sbt_0123456789abcdefghijklmnopqrstuvwxyzABCDEFG';
    const errors = invalid(tokens(alice(), token));
    expect(errors).toEqual([
      {
        path: 'auth.tokens[1]',
        found: `a string of ${token.length} characters (not shown)`,
        expected: TOKEN_EXPECTED,
      },
    ]);
    expect(JSON.stringify(errors)).not.toContain('sbt_');
  });

  it.each([
    [null, 'an empty value'],
    [42, '42'],
    [['alice'], 'a list of 1 item'],
  ])('refuses the entry %j with one issue', (entry, found) => {
    expect(issue(tokens(entry))).toEqual({ path: 'auth.tokens[0]', found, expected: TOKEN_EXPECTED });
  });

  it('refuses tokens that are not a list, with one issue', () => {
    expect(issue(withAuth({ tokens: { alice: ALICE } }))).toEqual({
      path: 'auth.tokens',
      found: 'a map (alice)',
      expected: LIST_EXPECTED,
    });
  });

  it('refuses the same hash twice, whatever its case, naming the first entry', () => {
    expect(issue(tokens(alice(), { principal: 'bob', sha256: ALICE.toUpperCase() }))).toEqual({
      path: 'auth.tokens[1].sha256',
      found: 'the same hash as tokens[0]',
      expected: 'a different token for every entry',
    });
  });

  it('numbers duplicates by their place in the file, past a broken entry', () => {
    expect(invalid(tokens(alice(), 'oops', { principal: 'bob', sha256: BOB }, alice(), alice()))).toEqual([
      { path: 'auth.tokens[1]', found: 'a string of 4 characters (not shown)', expected: TOKEN_EXPECTED },
      {
        path: 'auth.tokens[3].sha256',
        found: 'the same hash as tokens[0]',
        expected: 'a different token for every entry',
      },
      {
        path: 'auth.tokens[4].sha256',
        found: 'the same hash as tokens[0]',
        expected: 'a different token for every entry',
      },
    ]);
  });

  it.each([
    ['role', 'roles'],
    ['sha', 'sha256'],
    ['Principal', 'principal'],
  ])('reports the unknown entry key %j, suggesting %j', (key, suggestion) => {
    const entry = { ...alice(), [key]: 'x' };
    expect(issue(tokens(entry))).toEqual({
      path: `auth.tokens[0].${key}`,
      found: 'an unknown key',
      expected: `one of the keys allowed in auth.tokens[0]: principal, sha256, roles (did you mean "${suggestion}"?)`,
    });
  });

  it('reports an unknown entry key without a near miss plainly', () => {
    expect(issue(tokens(alice({ token: 'x' })))).toEqual({
      path: 'auth.tokens[0].token',
      found: 'an unknown key',
      expected: 'one of the keys allowed in auth.tokens[0]: principal, sha256, roles',
    });
  });
});

describe('auth.jwt', () => {
  it('applies the defaults', () => {
    const { config } = valid(jwt());
    expect(config.auth).toEqual({
      tokens: [],
      jwt: {
        jwks: JWT.jwks,
        issuer: JWT.issuer,
        audience: ['mcp'],
        principalClaim: 'sub',
        clockToleranceMs: 30_000,
      },
    });
    expect('rolesClaim' in (config.auth?.jwt ?? {})).toBe(false);
  });

  it('reads every key, with tokens beside it', () => {
    const raw = withAuth({
      tokens: [alice()],
      jwt: {
        ...JWT,
        audience: ['mcp', 'https://gw.example.com'],
        principalClaim: 'email',
        rolesClaim: 'groups',
        clockTolerance: '2m',
      },
    });
    expect(valid(raw).config.auth).toEqual({
      tokens: [{ principal: 'alice', sha256: ALICE, roles: [] }],
      jwt: {
        jwks: JWT.jwks,
        issuer: JWT.issuer,
        audience: ['mcp', 'https://gw.example.com'],
        principalClaim: 'email',
        rolesClaim: 'groups',
        clockToleranceMs: 120_000,
      },
    });
  });

  it('reads values from the environment', () => {
    const env = { IDP: 'https://idp.example.com', AUD: 'mcp', TOL: '5s' };
    const jwtConfig = jwtOf(
      jwt({
        jwks: '${env:IDP}/jwks.json',
        issuer: '${env:IDP}',
        audience: '${env:AUD}',
        clockTolerance: '${env:TOL}',
      }),
      { env },
    );
    expect(jwtConfig).toMatchObject({
      jwks: 'https://idp.example.com/jwks.json',
      issuer: 'https://idp.example.com',
      audience: ['mcp'],
      clockToleranceMs: 5000,
    });
  });

  describe('jwks', () => {
    it.each([
      'https://idp.example.com/.well-known/jwks.json',
      'HTTPS://IDP.example.com/jwks',
      'http://localhost:8080/jwks.json',
      'http://127.0.0.1/jwks.json',
      'http://127.1.2.3:9/jwks.json',
      'http://[::1]:9000/jwks.json',
      'file:///etc/idp/jwks.json',
      '/etc/idp/jwks.json',
    ])('keeps the URL or absolute path %j as written', (jwks) => {
      expect(jwtOf(jwt({ jwks })).jwks).toBe(jwks);
    });

    it.each([
      ['jwks.json', '/etc/switchboard/jwks.json'],
      ['keys/jwks.json', '/etc/switchboard/keys/jwks.json'],
      ['./keys/jwks.json', '/etc/switchboard/keys/jwks.json'],
      ['../idp/jwks.json', '/etc/idp/jwks.json'],
      ['./a:b.json', '/etc/switchboard/a:b.json'],
    ])('resolves the relative path %j against the configuration directory', (jwks, resolved) => {
      expect(jwtOf(jwt({ jwks })).jwks).toBe(resolved);
    });

    it('resolves against the baseDir given, not the working directory', () => {
      expect(jwtOf(jwt({ jwks: 'keys/jwks.json' }), { baseDir: '/srv/gw' }).jwks).toBe(
        '/srv/gw/keys/jwks.json',
      );
      expect(jwtOf(jwt({ jwks: '${env:F}' }), { baseDir: '/srv/gw', env: { F: 'k.json' } }).jwks).toBe(
        '/srv/gw/k.json',
      );
    });

    it.each<[string, string]>([
      [
        'http://idp.example.com/jwks.json',
        `${JWKS_EXPECTED}: keys fetched over http:// from another machine could be swapped on the way`,
      ],
      [
        'http://10.0.0.5/jwks.json',
        `${JWKS_EXPECTED}: keys fetched over http:// from another machine could be swapped on the way`,
      ],
      [
        'http://idp.localhost/jwks.json',
        `${JWKS_EXPECTED}: keys fetched over http:// from another machine could be swapped on the way`,
      ],
      ['ftp://idp.example.com/jwks.json', JWKS_EXPECTED],
      ['ldap://idp.example.com/', JWKS_EXPECTED],
      ['https://', JWKS_EXPECTED],
      ['http://[::1/jwks', JWKS_EXPECTED],
      ['file://idp.example.com/jwks.json', `${JWKS_EXPECTED}; a file: URL is file:///absolute/path`],
      ...['https:idp.example.com/jwks', 'file:jwks.json', 'localhost:8080/jwks.json'].map(
        (jwks) =>
          [
            jwks,
            `${JWKS_EXPECTED}; a URL has // after the scheme, and a file name containing ":" needs ./ before it`,
          ] as [string, string],
      ),
    ])('refuses %j', (jwks, expected) => {
      expect(issue(jwt({ jwks }))).toEqual({ path: 'auth.jwt.jwks', found: JSON.stringify(jwks), expected });
    });

    it('refuses credentials in the URL without echoing them', () => {
      expect(issue(jwt({ jwks: 'https://user:s3cret@idp.example.com/jwks' }))).toEqual({
        path: 'auth.jwt.jwks',
        found: 'a URL with user:password@ (value not shown)',
        expected: `${JWKS_EXPECTED}, without credentials`,
      });
    });

    it.each([
      ['', '""'],
      ['  ', '"  "'],
    ])('refuses the empty value %j', (jwks, found) => {
      expect(issue(jwt({ jwks }))).toEqual({
        path: 'auth.jwt.jwks',
        found,
        expected: `a non-empty string: ${JWKS_EXPECTED}`,
      });
    });

    it('requires it', () => {
      const { jwks: _, ...rest } = JWT;
      expect(issue(withAuth({ jwt: rest }))).toEqual({
        path: 'auth.jwt.jwks',
        found: 'nothing',
        expected: JWKS_EXPECTED,
      });
    });

    it('accepts exactly what the JWT authenticator accepts', () => {
      const samples = [
        'https://idp.example.com/jwks',
        'http://localhost/jwks',
        'http://LOCALHOST/jwks',
        'http://127.0.0.1/jwks',
        'http://127.255.0.1:1/jwks',
        'http://[::1]/jwks',
        'http://[0:0:0:0:0:0:0:1]/jwks',
        'http://127.1/jwks',
        'http://2130706433/jwks',
        'http://sub.localhost/jwks',
        'http://localhost.example.com/jwks',
        'http://128.0.0.1/jwks',
        'http://[::2]/jwks',
        'ws://localhost/jwks',
        'file:///x/jwks.json',
        'file://localhost/x/jwks.json',
        'file://other/x/jwks.json',
        'FILE:///x/jwks.json',
        '/x/jwks.json',
        'jwks.json',
      ];
      for (const jwks of samples) {
        const result = validateConfig(jwt({ jwks }), BASE);
        let runtime = true;
        try {
          // The authenticator's own check, on the value validation produces.
          jwksSource(result.ok ? (result.config.auth?.jwt?.jwks ?? '') : jwks);
        } catch {
          runtime = false;
        }
        expect({ jwks, accepted: result.ok }).toEqual({ jwks, accepted: runtime });
      }
    });
  });

  describe('issuer and audience', () => {
    it.each([
      [['mcp'], ['mcp']],
      [
        ['a', 'b'],
        ['a', 'b'],
      ],
      ['https://gw.example.com', ['https://gw.example.com']],
    ])('reads the audience %j', (audience, expected) => {
      expect(jwtOf(jwt({ audience })).audience).toEqual(expected);
    });

    it('requires the issuer and the audience', () => {
      expect(invalid(withAuth({ jwt: { jwks: JWT.jwks } }))).toEqual([
        { path: 'auth.jwt.issuer', found: 'nothing', expected: 'the expected "iss" of tokens' },
        { path: 'auth.jwt.audience', found: 'nothing', expected: AUDIENCE_EXPECTED },
      ]);
    });

    it('refuses an empty issuer', () => {
      expect(issue(jwt({ issuer: '' }))).toEqual({
        path: 'auth.jwt.issuer',
        found: '""',
        expected: 'a non-empty string: the expected "iss" of tokens',
      });
    });

    it.each([
      [[], 'auth.jwt.audience', 'an empty list'],
      ['', 'auth.jwt.audience', '""'],
      [' ', 'auth.jwt.audience', '" "'],
      [42, 'auth.jwt.audience', '42'],
      [{ aud: 'x' }, 'auth.jwt.audience', 'a map (aud)'],
      [['mcp', ''], 'auth.jwt.audience[1]', '""'],
      [['mcp', 7], 'auth.jwt.audience[1]', '7'],
    ])('refuses the audience %j', (audience, path, found) => {
      expect(issue(jwt({ audience }))).toEqual({ path, found, expected: AUDIENCE_EXPECTED });
    });
  });

  describe('claims and clock tolerance', () => {
    it.each(['principalClaim', 'rolesClaim'])('refuses an empty or non-string %s', (key) => {
      expect(issue(jwt({ [key]: '' }))).toEqual({
        path: `auth.jwt.${key}`,
        found: '""',
        expected: 'the name of a claim',
      });
      expect(issue(jwt({ [key]: ['roles'] }))).toEqual({
        path: `auth.jwt.${key}`,
        found: 'a list of 1 item',
        expected: 'the name of a claim',
      });
    });

    it.each([
      [0, 0],
      ['0', 0],
      [1500, 1500],
      ['1500', 1500],
      ['250ms', 250],
      ['1.5s', 1500],
      ['2m', 120_000],
      ['1h', 3_600_000],
      ['1d', 86_400_000],
    ])('reads the clock tolerance %j as %d ms', (clockTolerance, ms) => {
      expect(jwtOf(jwt({ clockTolerance })).clockToleranceMs).toBe(ms);
    });

    it('reads any whole number of any unit', () => {
      const units = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;
      fc.assert(
        fc.property(
          fc.nat({ max: 100_000 }),
          fc.constantFrom(...(Object.keys(units) as (keyof typeof units)[])),
          (n, unit) => {
            expect(jwtOf(jwt({ clockTolerance: `${n}${unit}` })).clockToleranceMs).toBe(n * units[unit]);
          },
        ),
      );
    });

    it.each([
      [
        '-1s',
        'a duration: a whole number of milliseconds or a number with a unit ms, s, m, h or d (e.g. 250ms, 30s, 10m, 1h); 0 disables',
      ],
      ['10 minutes', 'a unit ms, s, m, h or d after the number, not "minutes"; 0 disables'],
      [
        '1h30m',
        'a duration: a whole number of milliseconds or a number with a unit ms, s, m, h or d (e.g. 250ms, 30s, 10m, 1h); 0 disables',
      ],
      [1.5, 'a whole number of milliseconds (use a unit for fractions, e.g. 1.5s); 0 disables'],
      [
        true,
        'a duration: a whole number of milliseconds or a number with a unit ms, s, m, h or d (e.g. 250ms, 30s, 10m, 1h); 0 disables',
      ],
    ])('refuses the clock tolerance %j', (clockTolerance, expected) => {
      expect(issue(jwt({ clockTolerance }))).toEqual({
        path: 'auth.jwt.clockTolerance',
        found: JSON.stringify(clockTolerance),
        expected,
      });
    });
  });

  it.each([
    ['jwks_url', 'jwks'],
    ['audiences', 'audience'],
    ['clock_tolerance', 'clockTolerance'],
    ['iss', 'issuer'],
  ])('reports the unknown key %j, suggesting %j', (key, suggestion) => {
    expect(issue(jwt({ [key]: 'x' }))).toEqual({
      path: `auth.jwt.${key}`,
      found: 'an unknown key',
      expected: `one of the keys allowed in auth.jwt: jwks, issuer, audience, principalClaim, rolesClaim, clockTolerance (did you mean "${suggestion}"?)`,
    });
  });

  it('refuses a jwt that is not a map with one issue', () => {
    expect(issue(withAuth({ jwt: JWT.jwks }))).toEqual({
      path: 'auth.jwt',
      found: JSON.stringify(JWT.jwks),
      expected: 'a map with the keys jwks, issuer, audience, principalClaim, rolesClaim, clockTolerance',
    });
  });

  it('reports every required key of an empty jwt', () => {
    expect(invalid(withAuth({ jwt: null })).map((e) => e.path)).toEqual([
      'auth.jwt.jwks',
      'auth.jwt.issuer',
      'auth.jwt.audience',
    ]);
  });
});
