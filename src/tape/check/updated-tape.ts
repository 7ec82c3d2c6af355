/**
 * The tape `tape check --update` writes: the live run as a recording, built the way `tape record`
 * builds one (`tape-recorder.ts`'s `buildTape`: the one tape builder, the header's handshake read
 * from the messages, secret-shaped values cut and listed unless the caller passes no redactor), so
 * it is read, replayed and checked like any recorded tape. A server→client request made while
 * exactly one client call was open is tied to that call (`re`).
 */
import { isRequest, isResponse } from '../../protocol/jsonrpc/types.js';
import type { Tape, TapeSource } from '../tape-format.js';
import { buildTape } from '../tape-recorder.js';
import type { MessageRedactor } from '../tape-redaction.js';
import type { TapeEntry } from '../tape-writer.js';
import type { LiveRun } from './compare-run.js';

/** A new tape from `run` (its messages timed from `run.startedAt`), redacted by `redactor` when given. */
export function updatedTape(run: LiveRun, source: TapeSource, redactor: MessageRedactor | undefined): Tape {
  const entries: TapeEntry[] = [];
  /** Client requests not answered yet: id JSON → their seq (1-based, the entry's index + 1). */
  const open = new Map<string, number>();
  for (const [i, entry] of run.log.entries()) {
    const m = entry.message;
    const seq = i + 1;
    let re: number | undefined;
    if (entry.dir === 's2c' && isRequest(m) && open.size === 1) re = [...open.values()][0];
    if (entry.dir === 'c2s' && isRequest(m)) open.set(JSON.stringify(m.id), seq);
    if (entry.dir === 's2c' && isResponse(m)) open.delete(JSON.stringify(m.id));
    entries.push({
      dir: entry.dir,
      message: m,
      at: run.startedAt + entry.t,
      ...(re === undefined ? {} : { re }),
    });
  }
  return buildTape(entries, { source }, redactor);
}
