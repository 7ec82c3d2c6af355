/**
 * `switchboard auth token|hash`: make bearer tokens for the `auth.tokens` section, which stores
 * only their SHA-256. `token` prints a new token once (it is not kept anywhere) with the
 * configuration entry to add; `hash` prints the SHA-256 of an existing token, read from stdin so
 * that it stays out of shell history and `ps`.
 *
 * Output goes through the program's output configuration (tests capture it): the token and the
 * hash on stdout, explanations on stderr. Exit codes: 0 success, 2 bad usage or no token given.
 */
import { type Command, InvalidArgumentError } from 'commander';
import { stringify } from 'yaml';
import { isBearerTokenSyntax } from '../../auth/bearer.js';
import { hashToken, newToken } from '../../auth/token-hash.js';
import { ioOf, readAllBounded } from '../command-io.js';
import { addExamples } from '../help-text.js';

/** Names as `auth.tokens[].principal` and `roles` accept them (config/sections/auth.ts). */
const NAME = /^[A-Za-z0-9][A-Za-z0-9._@:-]{0,127}$/;
const NAME_EXPECTED = 'a name of letters, digits and . _ @ : - (at most 128 characters)';

/** The most read from stdin by `auth hash`: a token is far shorter; more is a mistake. */
const MAX_STDIN_BYTES = 64 * 1024;

function parseName(value: string): string {
  if (!NAME.test(value)) throw new InvalidArgumentError(`expected ${NAME_EXPECTED}, got "${value}"`);
  return value;
}

function collectRole(value: string, previous: string[] = []): string[] {
  return [...previous, parseName(value)];
}

/** What `registerAuthCommands` reads; tests give their own stdin. */
export interface AuthCommandOptions {
  /** Where `auth hash` reads a token when `--token` is absent; default `process.stdin`. */
  readonly stdin?: AsyncIterable<string | Buffer> & { readonly isTTY?: boolean };
}

/**
 * Adds `switchboard auth token --principal NAME [--role ROLE]...` (a new token on stdout, then the
 * YAML entry for `auth.tokens`; stderr says the token is shown only once) and `switchboard auth hash
 * [--token T]` (the SHA-256 of a token read from stdin, or from `--token`).
 */
export function registerAuthCommands(program: Command, options: AuthCommandOptions = {}): void {
  const auth = program
    .command('auth')
    .description(
      'make bearer tokens for the auth section of the configuration, which keeps only their SHA-256',
    );

  const tokenCmd = auth
    .command('token')
    .description('make a new bearer token and print it once, with the configuration entry that accepts it')
    .requiredOption(
      '--principal <name>',
      'who the token is (the ledger client_id, the owner of sessions)',
      parseName,
    )
    .option('--role <role>', 'a role of the principal (repeatable), e.g. approver', collectRole)
    .action((opts: { principal: string; role?: string[] }, command: Command) => {
      const io = ioOf(command);
      const token = newToken();
      const entry = { principal: opts.principal, sha256: hashToken(token), roles: opts.role ?? [] };
      io.out(`${token}\n\n`);
      io.out(
        '# Add this entry to auth.tokens in the configuration (it holds only the SHA-256 of the token):\n',
      );
      io.out(stringify({ auth: { tokens: [entry] } }, { lineWidth: 0 }));
      io.err(
        'switchboard: the token above is shown only once and is not stored anywhere: give it to the client now ' +
          '(it sends it as "Authorization: Bearer <token>"). If it is lost, make a new one and remove the old entry.\n',
      );
    });

  const hashCmd = auth
    .command('hash')
    .description('print the SHA-256 of a bearer token read from stdin (for auth.tokens[].sha256)')
    .option('--token <token>', 'the token (visible in shell history and to other users via ps: prefer stdin)')
    .action(async (opts: { token?: string }, command: Command) => {
      const io = ioOf(command);
      let token = opts.token;
      if (token === undefined) {
        const stdin = options.stdin ?? process.stdin;
        if (stdin.isTTY === true) io.err('switchboard: paste the token, then press Enter and Ctrl-D\n');
        const text = await readAllBounded(stdin, MAX_STDIN_BYTES);
        if (text === undefined) {
          io.err(`switchboard: stdin holds more than ${MAX_STDIN_BYTES} bytes; expected one token\n`);
          process.exitCode = 2;
          return;
        }
        token = text;
      }
      token = token.trim();
      if (token === '') {
        io.err('switchboard: no token given: pipe it to stdin, or pass --token\n');
        process.exitCode = 2;
        return;
      }
      if (!isBearerTokenSyntax(token)) {
        io.err(
          'switchboard: warning: this token holds characters (spaces, quotes, commas...) that an ' +
            '"Authorization: Bearer" header cannot carry, so no client can present it\n',
        );
      }
      io.out(`${hashToken(token)}\n`);
    });
  addExamples(
    tokenCmd,
    ['switchboard auth token --principal alice', 'switchboard auth token --principal bob --role approver'],
    'The token goes to stdout first, alone on its line, then the YAML to add to the configuration.\n' +
      'It is shown only this once: the configuration keeps only its SHA-256.\n',
  );
  addExamples(hashCmd, ['switchboard auth hash < token.txt', 'pbpaste | switchboard auth hash']);
}
