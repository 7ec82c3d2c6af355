/**
 * The environment of a spawned upstream: explicit, never the gateway's own. A minimal set of
 * variables a program needs to run is passed through; everything else must be named (`passEnv`) or
 * set (`env`), so the gateway's secrets (tokens, database URLs) are never inherited by accident.
 */
export const DEFAULT_PASS_ENV: readonly string[] =
  process.platform === 'win32'
    ? [
        'APPDATA',
        'HOMEDRIVE',
        'HOMEPATH',
        'LOCALAPPDATA',
        'PATH',
        'PROCESSOR_ARCHITECTURE',
        'SYSTEMDRIVE',
        'SYSTEMROOT',
        'TEMP',
        'USERNAME',
        'USERPROFILE',
        'PROGRAMFILES',
      ]
    : ['HOME', 'LOGNAME', 'PATH', 'SHELL', 'TERM', 'USER', 'LANG', 'LC_ALL', 'TMPDIR', 'TZ'];

/**
 * The child's environment: `DEFAULT_PASS_ENV` and `passEnv` taken from `source` where set there,
 * then `env` over them. Nothing else of `source` is passed.
 */
export function childEnvironment(
  options: { readonly passEnv?: readonly string[]; readonly env?: Readonly<Record<string, string>> },
  source: NodeJS.ProcessEnv = process.env,
): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of [...DEFAULT_PASS_ENV, ...(options.passEnv ?? [])]) {
    const value = source[name];
    if (value !== undefined) out[name] = value;
  }
  return { ...out, ...(options.env ?? {}) };
}
