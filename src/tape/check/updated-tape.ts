/**
 * The tape `tape check --update` writes: the live run as a recording, through the one tape
 * builder (`tape-writer.ts`), so it is read, replayed and checked like any recorded tape. The
 * header is the live server's: its `initialize` result and revision, `recordedAt` now, and where
 * it came from (`via: record`, the command or URL checked). A server→client request made while
 * exactly one client call was open is tied to that call (`re`).
 */
import type { JsonObject } from '../../protocol/jsonrpc/types.js';
import { isRequest, isResponse } from '../../protocol/jsonrpc/types.js';
import type { Tape, TapeHeader, TapeSource } from '../tape-format.js';
import { TapeBuilder } from '../tape-writer.js';
import type { LiveRun } from './compare-run.js';

/** A new tape from `run`, keeping what `recorded`'s header says of the client. */
export function updatedTape(recorded: TapeHeader, run: LiveRun, source: TapeSource, now: Date): Tape {
  const builder = new TapeBuilder();
  const open = new Set<number>();
  let initialize: JsonObject | undefined;
  for (const entry of run.log) {
    const m = entry.message;
    let re: number | undefined;
    if (entry.dir === 's2c' && isRequest(m) && open.size === 1) re = [...open][0];
    const line = builder.add({
      dir: entry.dir,
      message: m,
      at: entry.t,
      ...(re === undefined ? {} : { re }),
    });
    if (entry.dir === 'c2s' && isRequest(m)) open.add(line.seq);
    if (entry.dir === 's2c' && isResponse(m) && line.re !== undefined) {
      open.delete(line.re);
      const request = builder.messages[line.re - 1]?.message;
      if (request !== undefined && 'method' in request && request.method === 'initialize' && 'result' in m)
        initialize = m.result as JsonObject;
    }
  }
  const serverInitialize = initialize ?? recorded.server.initialize;
  const version = serverInitialize.protocolVersion;
  const header: TapeHeader = {
    tape: recorded.tape,
    kind: 'header',
    recordedAt: now.toISOString(),
    source,
    protocolVersion: typeof version === 'string' ? version : recorded.protocolVersion,
    server: { initialize: serverInitialize },
    ...(recorded.client === undefined ? {} : { client: recorded.client }),
    redactions: [],
    incomplete: [],
  };
  return builder.tape(header);
}
