import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { canonicalize, toWellFormedJson } from './canonical-json.js';
import {
  createRedactor,
  createSecretKeyTest,
  PATTERN_PIECE,
  PATTERN_STEP,
  REDACTED,
  REDACTED_CIRCULAR,
  REDACTED_DEPTH,
  REDACTED_ERROR,
  redact,
  redactPatternInPieces,
} from './redaction.js';

/** The secret that must never survive redaction; it fits every token alphabet used below. */
const S = 'S3NT1NEL';
const pad = (length: number, char = 'a'): string => char.repeat(length);

const SECRET_KEYS = [
  'password',
  'Password',
  'passwd',
  'pass',
  'DB_PASS',
  'dbPass',
  'pwd',
  'passphrase',
  'secret',
  'client_secret',
  'clientSecret',
  'token',
  'access_token',
  'refreshToken',
  'X-Auth-Token',
  'api_key',
  'apiKey',
  'API-KEY',
  'x-api-key',
  'private_key',
  'privateKey',
  'credential',
  'credentials',
  'bearer',
  'authorization',
  'Proxy-Authorization',
  'cookie',
  'Set-Cookie',
  'session',
  'sessionId',
  'Mcp-Session-Id',
  'otp',
  'access_key',
  'aws_secret_access_key',
  'signing_key',
  'jwt',
  'auth',
];

/** Every supported secret shape, each carrying the sentinel. */
const SECRET_STRINGS: Record<string, string> = {
  pemRsa: `-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA${S}\nabc+/=\n-----END RSA PRIVATE KEY-----`,
  pemPkcs8: `key follows -----BEGIN PRIVATE KEY-----\nMIIE${S}\n-----END PRIVATE KEY----- done`,
  pemOpenssh: `-----BEGIN OPENSSH PRIVATE KEY-----\nb3Blbn${S}\n-----END OPENSSH PRIVATE KEY-----`,
  pemEncrypted: `-----BEGIN ENCRYPTED PRIVATE KEY-----\n${S}\n-----END ENCRYPTED PRIVATE KEY-----`,
  pemPgp: `-----BEGIN PGP PRIVATE KEY BLOCK-----\n\nlQ${S}\n-----END PGP PRIVATE KEY BLOCK-----`,
  pemTruncated: `-----BEGIN EC PRIVATE KEY-----\nMHcC${S}`,
  awsAkia: `aws AKIA${S}00000000 in text`,
  awsAsia: `ASIA${S}ABCDEFGH`,
  githubPat: `ghp_${S}${pad(28, 'B')}`,
  githubOauth: `gho_${S}${pad(28, 'C')}`,
  githubFineGrained: `github_pat_11ABCDEFG0${S}_${pad(59, 'x')}`,
  gitlab: `glpat-${S}${pad(12, 'y')}`,
  npm: `//registry.npmjs.org/:_authToken=npm_${S}${pad(28, 'Z')}`,
  pypi: `pypi-AgEIcHlwaS5vcmc${S}${pad(60, 'Q')}`,
  slackBot: `xoxb-123456789012-${S}-abcdefghijkl`,
  slackUser: `xoxp-1-${S}-2-3`,
  openaiLegacy: `sk-${S}${pad(40, 'T')}`,
  openaiProject: `OPENAI=sk-proj-${S}_${pad(30, 'u')}-end`,
  anthropic: `sk-ant-api03-${S}${pad(80, 'v')}-AA`,
  huggingFace: `hf_${S}${pad(26, 'W')}`,
  stripeLive: `sk_live_${S}${pad(16, '4')}`,
  stripeRestricted: `rk_live_${S}${pad(16, '5')}`,
  google: `AIza${S}${pad(27, 'g')}`,
  switchboard: `use sbt_${S}${pad(35, '-')}_x`,
  jwt: `eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0${S}.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c`,
  authorizationHeader: `GET / HTTP/1.1\r\nAuthorization: Bearer ${S}abcdef\r\nAccept: */*`,
  authorizationBasic: `authorization: Basic ${S}Zm9vOmJhcg==`,
  authorizationJson: `{"Authorization":"Token ${S}"}`,
  bearer: `curl -H 'x: y' Bearer ${S}abcdefgh`,
  cookie: `Cookie: session=${S}; theme=dark`,
  passwordPair: `password=${S}`,
  passwordQuoted: `db_password: "${S} with spaces"`,
  passwordEscapedQuote: `password="ab\\"${S}"`,
  passwordUnterminated: `password='${S} and the rest`,
  tokenQuery: `https://api.example.com/v1?token=${S}&page=2`,
  apiKeyPair: `API_KEY='${S}'`,
  jsonText: `{"client_secret": "${S}", "user": "bob"}`,
  envLine: `export AWS_SECRET_ACCESS_KEY=${S}/abc+def`,
  connectionString: `Server=db;User Id=sa;Password=${S};Encrypt=true`,
  cliFlag: `mysql --user root --password ${S} mydb`,
  cliFlagEquals: `tool --token=${S} --verbose`,
  postgresUrl: `postgres://admin:${S}@db.internal:5432/app`,
  httpsUrl: `clone https://user:${S}@example.com/repo.git now`,
  urlPasswordWithAt: `mysql://root:p@ss${S}@host/db`,
  redisEmptyUser: `redis://:${S}@cache:6379/0`,
  amqp: `amqp://guest:${S}@rabbit`,
};

const INNOCENT: Record<string, unknown> = {
  uuid: '123e4567-e89b-12d3-a456-426614174000',
  sha256: 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855',
  gitSha: '4b825dc642cb6eb9a060e54bf8d69288fbee4904',
  words: 'The author passed the compass to a passenger; a bearer of good news.',
  url: 'https://example.com/path/to/page?q=search&page=2#frag',
  urlWithUser: 'https://alice@example.com/repo.git',
  urlWithPort: 'http://localhost:8080/health',
  email: 'alice@example.com',
  path: '/etc/passwd',
  date: '2026-06-14T12:34:56.789Z',
  max_tokens: 1024,
  input_tokens: 17,
  cache_read_input_tokens: 3,
  tokenizer: 'cl100k_base',
  author: 'Jane Doe',
  task: 'task-1234567890abcdefghijklmnop',
  numbers: [1, 2.5, -3],
  flags: { enabled: true, count: 0 },
  nothing: null,
};

function leaks(value: unknown): boolean {
  return JSON.stringify(value).includes(S);
}

describe('redaction: secret keys (tamper test 29)', () => {
  it.each(SECRET_KEYS)('replaces the whole value under %s', (key) => {
    const out = redact({ [key]: `${S}`, nested: { [key]: { deep: [S, 42] } }, list: [{ [key]: 12345 }] });
    expect(out).toEqual({ [key]: REDACTED, nested: { [key]: REDACTED }, list: [{ [key]: REDACTED }] });
  });

  it('redacts the value of a [name, value] pair with a secret name', () => {
    expect(redact([['X-Api-Key', S], ['Accept', 'text/plain'], ['token']])).toEqual([
      ['X-Api-Key', REDACTED],
      ['Accept', 'text/plain'],
      ['token'],
    ]);
  });

  it('keeps null and undefined under a secret key (they reveal nothing)', () => {
    expect(redact({ password: null, token: undefined })).toEqual({ password: null, token: undefined });
  });

  it('leaves innocent keys and values alone', () => {
    expect(redact(INNOCENT)).toEqual(INNOCENT);
  });

  it('keeps the values of keepKeys names, still checking them for secret shapes', () => {
    const redactor = createRedactor({ keepKeys: ['progressToken'] });
    expect(redactor({ progressToken: 'p-1', token: S, nested: { progressToken: 7 } })).toEqual({
      progressToken: 'p-1',
      token: REDACTED,
      nested: { progressToken: 7 },
    });
    expect(redactor({ progressToken: 'Bearer abcdefghijklmnop' })).toEqual({
      progressToken: `Bearer ${REDACTED}`,
    });
    // Exact names only: another spelling is still secret.
    expect(redactor({ ProgressToken: S })).toEqual({ ProgressToken: REDACTED });
  });

  it('exposes its member-name test, extra names and keepKeys included', () => {
    const isSecret = createSecretKeyTest({
      extraKeyPatterns: ['internal_ref', /^x-/],
      keepKeys: ['progressToken'],
    });
    for (const key of [...SECRET_KEYS, 'internalRef', 'INTERNAL-REF', 'x-custom'])
      expect(isSecret(key)).toBe(true);
    for (const key of ['progressToken', 'name', 'arguments', 'max_tokens']) expect(isSecret(key)).toBe(false);
    expect(createSecretKeyTest()('progressToken')).toBe(true);
  });
});

describe('redaction: secret shapes inside strings (tamper test 29)', () => {
  it.each(Object.entries(SECRET_STRINGS))('removes the sentinel from %s', (_, text) => {
    const out = redact(text) as string;
    expect(out).not.toContain(S);
    expect(out).toContain(REDACTED);
  });

  it('keeps the context around a secret', () => {
    expect(redact(SECRET_STRINGS.postgresUrl)).toBe(`postgres://admin:${REDACTED}@db.internal:5432/app`);
    expect(redact(SECRET_STRINGS.httpsUrl)).toBe(`clone https://user:${REDACTED}@example.com/repo.git now`);
    expect(redact(SECRET_STRINGS.authorizationHeader)).toBe(
      `GET / HTTP/1.1\r\nAuthorization: ${REDACTED}\r\nAccept: */*`,
    );
    expect(redact(SECRET_STRINGS.tokenQuery)).toBe(`https://api.example.com/v1?token=${REDACTED}&page=2`);
    expect(redact(SECRET_STRINGS.pemPkcs8)).toBe(`key follows ${REDACTED} done`);
    expect(redact(SECRET_STRINGS.cliFlag)).toBe(`mysql --user root --password ${REDACTED} mydb`);
    expect(redact(SECRET_STRINGS.awsAkia)).toBe(`aws ${REDACTED} in text`);
  });

  it('redacts shapes found in member names too', () => {
    const out = redact({ [`ghp_${S}${pad(28, 'B')}`]: 1 });
    expect(leaks(out)).toBe(false);
  });

  it('removes every sentinel from a structure holding each shape and each key (sentinel test)', () => {
    const structure = {
      shapes: SECRET_STRINGS,
      asArray: Object.values(SECRET_STRINGS),
      keys: Object.fromEntries(SECRET_KEYS.map((key) => [key, { v: S }])),
      env: { PATH: '/usr/bin', GITHUB_TOKEN: S, DATABASE_URL: SECRET_STRINGS.postgresUrl },
      headers: [
        ['Authorization', `Bearer ${S}`],
        ['X-Api-Key', S],
      ],
      innocent: INNOCENT,
    };
    expect(leaks(structure)).toBe(true);
    const out = redact(structure) as { innocent: unknown };
    expect(leaks(out)).toBe(false);
    expect(out.innocent).toEqual(INNOCENT);
  });
});

describe('redaction: structure', () => {
  it('cuts values nested deeper than 32 levels', () => {
    let deep: unknown = `leaf ${S}`;
    for (let i = 0; i < 40; i++) deep = { n: deep };
    let node = redact(deep) as { n: unknown };
    for (let i = 0; i < 32; i++) node = node.n as { n: unknown };
    expect(node.n).toBe(REDACTED_DEPTH);
    expect(leaks(redact(deep))).toBe(false);
  });

  it('cuts deep arrays too, and honours a custom depth', () => {
    const shallow = createRedactor({ maxDepth: 2 });
    expect(shallow([[[S]]])).toEqual([[[REDACTED_DEPTH]]]);
    expect(shallow({ a: { b: 'x' } })).toEqual({ a: { b: 'x' } });
  });

  it('handles cycles', () => {
    const value: Record<string, unknown> = { name: 'x' };
    value.self = value;
    value.list = [value];
    expect(redact(value)).toEqual({ name: 'x', self: REDACTED_CIRCULAR, list: [REDACTED_CIRCULAR] });
  });

  it('copies instead of mutating, and keeps "__proto__" as a member', () => {
    const input = JSON.parse(`{"__proto__":{"password":"${S}"},"a":[{"token":"${S}"}]}`);
    const before = JSON.stringify(input);
    const out = redact(input) as Record<string, unknown>;
    expect(JSON.stringify(input)).toBe(before);
    expect(out).not.toBe(input);
    expect(Object.keys(out)).toEqual(['__proto__', 'a']);
    expect(leaks(out)).toBe(false);
  });

  it('applies toJSON and unwraps boxed primitives', () => {
    expect(redact({ when: new Date(0), n: new Number(3), s: new String(`password=${S}`) })).toEqual({
      when: '1970-01-01T00:00:00.000Z',
      n: 3,
      s: `password=${REDACTED}`,
    });
  });

  it('never throws: a throwing getter, toJSON or Proxy becomes an error marker', () => {
    const hostile = {
      get bad(): unknown {
        throw new Error('getter');
      },
      get password(): unknown {
        throw new Error('getter');
      },
      json: {
        toJSON() {
          throw new Error('toJSON');
        },
      },
      ok: 1,
    };
    expect(redact(hostile)).toEqual({
      bad: REDACTED_ERROR,
      password: REDACTED_ERROR,
      json: REDACTED_ERROR,
      ok: 1,
    });
    const proxy = new Proxy(
      {},
      {
        ownKeys() {
          throw new Error('trap');
        },
      },
    );
    expect(redact(proxy)).toBe(REDACTED_ERROR);
  });

  it('never throws for any input, and its output is hashable after toWellFormedJson', () => {
    fc.assert(
      fc.property(
        fc.anything({
          withBigInt: true,
          withBoxedValues: true,
          withDate: true,
          withNullPrototype: true,
          withMap: true,
        }),
        (value) => {
          const out = redact(value);
          expect(() => canonicalize(toWellFormedJson(out))).not.toThrow();
        },
      ),
      { numRuns: 300 },
    );
  });

  it('removes a sentinel placed under a secret key anywhere in a random structure', () => {
    const key = fc.constantFrom(...SECRET_KEYS);
    fc.assert(
      fc.property(
        fc.jsonValue({ maxDepth: 4 }),
        key,
        fc.array(fc.nat(), { maxLength: 4 }),
        (value, secretKey, path) => {
          const holder: Record<string, unknown> = { data: value };
          let node: Record<string, unknown> = holder;
          for (const step of path) {
            const next: Record<string, unknown> = { [`k${step}`]: node.data };
            node.data = next;
            node = next;
          }
          node[secretKey] = `${S}`;
          expect(leaks(redact(holder))).toBe(false);
        },
      ),
      { numRuns: 200 },
    );
  });
});

describe('redaction: cost', () => {
  it('stays linear on adversarial strings (no catastrophic backtracking)', () => {
    // Each is 100,000 characters; a quadratic rule took over 15 s on the first one.
    const inputs = [
      'a-'.repeat(50_000),
      'a.'.repeat(50_000),
      'password:'.repeat(11_111),
      'password="\\'.repeat(9_090),
      'a://b:c@'.repeat(12_500),
      '-----BEGIN '.repeat(9_090),
      'x-api-key.'.repeat(10_000),
      'eyJaaaaa.'.repeat(11_111),
    ];
    for (const input of inputs) {
      const started = performance.now();
      redact(input);
      expect(performance.now() - started).toBeLessThan(2_000);
    }
  });
});

describe('redaction: extra rules', () => {
  const custom = createRedactor({
    extraKeyPatterns: ['ssn', /^x-internal-/i],
    extraValuePatterns: [/\bEMP-\d{6}\b/, /(?:)/],
  });

  it('redacts extra keys by normalized substring or by RegExp on the raw name', () => {
    expect(custom({ customer_SSN: '123-45-6789', 'X-Internal-Route': 'a', other: 'b' })).toEqual({
      customer_SSN: REDACTED,
      'X-Internal-Route': REDACTED,
      other: 'b',
    });
  });

  it('redacts extra value patterns (global or not) and ignores empty matches', () => {
    expect(custom('badge EMP-123456 and EMP-654321')).toBe(`badge ${REDACTED} and ${REDACTED}`);
  });

  it('keeps the built-in rules', () => {
    expect(custom({ password: 'x', note: `token=${S}` })).toEqual({
      password: REDACTED,
      note: `token=${REDACTED}`,
    });
  });
});

describe('redaction: extra value patterns on long strings', () => {
  const employee = createRedactor({ extraValuePatterns: [/EMP-\d{6}/] });

  it('matches a string of up to PATTERN_PIECE units whole, as before', () => {
    const text = `${pad(PATTERN_PIECE - 20)} EMP-123456 x`.slice(-PATTERN_PIECE);
    expect(redactPatternInPieces(text, /EMP-\d{6}|^|$/g)).toBe(text.replace('EMP-123456', REDACTED));
  });

  it('finds matches anywhere in a long string, across the boundaries of pieces', () => {
    for (const at of [0, PATTERN_STEP - 3, PATTERN_PIECE - 5, 3 * PATTERN_STEP + 1, 10_000]) {
      const text = `${pad(at)}EMP-123456${pad(20_000 - at)}`;
      expect(employee(text)).toBe(`${pad(at)}${REDACTED}${pad(20_000 - at)}`);
    }
    const many = `${'x EMP-000001 '.repeat(1000)}`;
    expect(employee(many)).toBe(`${`x ${REDACTED} `.repeat(1000)}`);
  });

  it('follows a match that runs to the end of its piece as far as it goes', () => {
    const redactor = createRedactor({ extraValuePatterns: [/secret=\S+/] });
    const text = `head secret=${'k'.repeat(5000)} tail`;
    expect(redactor(text)).toBe(`head ${REDACTED} tail`);
    const long = `${pad(700)} secret=${'k'.repeat(300_000)}`;
    expect(redactor(long)).toBe(`${pad(700)} ${REDACTED}`);
  });

  it('keeps the work proportional to the length for a pattern that fails after long scans', () => {
    // Every start position scans the whole run of letters before failing: quadratic on a whole
    // string (about 15 s for 128 KiB), linear piece by piece. The work is counted, not timed (a
    // time limit failed on a loaded machine): no search is handed more than a piece, so each
    // costs at most a piece's worth whatever the length, and the pieces together cover the text
    // about twice (they overlap by half).
    const handed: number[] = [];
    class CountingPattern extends RegExp {
      override exec(text: string): RegExpExecArray | null {
        handed.push(text.length - this.lastIndex);
        return super.exec(text);
      }
    }
    const text = 'a'.repeat(128 * 1024);
    expect(redactPatternInPieces(text, new CountingPattern('[a-z]+@example\\.com', 'g'))).toBe(text);
    expect(handed.length).toBeGreaterThan(text.length / PATTERN_PIECE);
    expect(Math.max(...handed)).toBeLessThanOrEqual(PATTERN_PIECE);
    expect(handed.reduce((sum, n) => sum + n, 0)).toBeLessThanOrEqual(2 * text.length + PATTERN_PIECE);
    // The redactor takes that path for its extra patterns (a whole-string search would also
    // overrun the test's time limit, a safety net only).
    const redactor = createRedactor({ extraValuePatterns: [/[a-z]+@example\.com/] });
    expect(redactor(text)).toBe(text);
  });
});
