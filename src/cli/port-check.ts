/**
 * Whether `serve` can have its port, asked before it creates anything: a gateway that cannot
 * listen must leave no data directory, trace or ledger behind and start no upstream, and all of
 * those come before the listening socket (the gateway starts its upstreams, then listens). The
 * check binds the address and lets it go at once. Another process may still take the port in the
 * instant between; then the start fails later, as before, and only that race leaves files.
 */
import { createServer } from 'node:net';
import { SbErrorCode, SwitchboardError } from '../errors/switchboard-error.js';

/**
 * Resolves when `host:port` can be listened on (port 0 always can); rejects with a sentence for a
 * person when it cannot (`EADDRINUSE`, `EACCES`, an address this host does not have).
 */
export async function checkPortFree(host: string, port: number): Promise<void> {
  if (port === 0) return;
  const probe = createServer();
  await new Promise<void>((resolve, reject) => {
    probe.once('error', (error: NodeJS.ErrnoException) => {
      const where = `${host.includes(':') ? `[${host}]` : host}:${port}`;
      const why =
        error.code === 'EADDRINUSE'
          ? `${where} is already in use (another gateway? choose one with --port, or server.port)`
          : error.code === 'EACCES'
            ? `${where} needs privileges this process does not have (choose a port above 1023 with --port)`
            : `cannot listen on ${where}: ${error.message}`;
      reject(new SwitchboardError(SbErrorCode.UsageError, why, { cause: error }));
    });
    probe.listen({ host, port, exclusive: true }, () => probe.close(() => resolve()));
  });
}
