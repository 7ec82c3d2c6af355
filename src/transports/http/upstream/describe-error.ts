/**
 * A short, log-safe description of a network failure: undici's error code when it has one (e.g.
 * `ECONNREFUSED`, `UND_ERR_SOCKET`), then the message. Used in logs and in the synthesized errors
 * that name the network error to the client.
 */
export function describeNetworkError(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const cause = (error as { cause?: unknown }).cause;
  const code =
    (error as { code?: unknown }).code ??
    (cause instanceof Error ? (cause as { code?: unknown }).code : undefined);
  const message = error.message || (cause instanceof Error ? cause.message : '') || error.name;
  return typeof code === 'string' && !message.includes(code) ? `${code}: ${message}` : message;
}
