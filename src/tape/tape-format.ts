/**
 * The tape format, version 1 (`docs/tapes.md` describes every field).
 *
 * A tape is the conversation between ONE MCP client and ONE MCP server as the server saw it (the
 * hops gateway→upstream and upstream→gateway), in JSON Lines: a header line, then one line per
 * message in the order the gateway saw them. Replaying a tape is being that server; checking one
 * is being that client. These are plain, immutable data types: the reader (`tape-reader.ts`) is
 * the one way text becomes a `Tape`, and the writer (`tape-writer.ts`) the one way a `Tape`
 * becomes text, so `readTape(writeTape(t))` gives `t` back (a property test holds them to it).
 */
import type { JsonObject, JsonRpcMessage } from '../protocol/jsonrpc/types.js';

/**
 * The version this build writes. Version 2 (written as it is recorded) lists each redaction on the
 * message line it cut, since the header is written before those lines exist; version 1 listed them
 * all in the header. Both are read into the same `Tape`, whose header holds every cut.
 */
export const TAPE_VERSION = 2;

/** The versions this build reads. */
export const READABLE_TAPE_VERSIONS: readonly number[] = [1, 2];

/** Who sent a message: the client (`c2s`, toward the server) or the server (`s2c`). */
export type TapeDirection = 'c2s' | 's2c';

/** Where a tape came from. */
export interface TapeSource {
  /** `record`: `switchboard tape record` wrote it live; `export`: read back from a trace. */
  readonly via: 'record' | 'export';
  /** The server's command line (record, or an export whose upstream was a stdio command). */
  readonly command?: readonly string[];
  /** The server's URL, for an HTTP upstream. */
  readonly url?: string;
  /** The trace database an export read. */
  readonly trace?: string;
  /** The trace session (export): its id. */
  readonly session?: string;
  /** The MEUP context an export was asked for, when it was a context rather than a session. */
  readonly context?: string;
  /** The upstream's name in the gateway's configuration (export from `serve`). */
  readonly upstream?: string;
  /** The gateway that wrote it: `switchboard <version>`. */
  readonly gateway: string;
}

/** A value the redaction rules cut from a message (`--keep-secrets` would have kept it). */
export interface TapeRedaction {
  /** The message line's `seq`. */
  readonly seq: number;
  /** JSON Pointer (RFC 6901) into that line (so it starts with `/message`), of the value that was changed. */
  readonly path: string;
  /** The rule that matched (a secret pattern's name, or `member-name` for a secret-named member). */
  readonly rule: string;
}

/** A message whose payload the source did not keep whole (export from a trace with digests). */
export interface TapeIncomplete {
  /** The message line's `seq` (for a call: its response's, or its request's when no response). */
  readonly seq: number;
  /** The method of the call it belongs to, when known. */
  readonly method?: string;
  /** Why: e.g. `payload omitted by trace mode 'digest'`. */
  readonly reason: string;
}

/** Line 1. */
export interface TapeHeader {
  /** The format's version (`TAPE_VERSION`); a reader refuses another. */
  readonly tape: typeof TAPE_VERSION;
  /** Marks the header line. */
  readonly kind: 'header';
  /** ISO 8601, when the first message crossed. */
  readonly recordedAt: string;
  /** Where the tape came from (`tape record`, or an export of a trace). */
  readonly source: TapeSource;
  /** The revision the server spoke (`2026-07-28` for a stateless-era server). */
  readonly protocolVersion: string;
  /** The server's `initialize` result, whole. */
  readonly server: { readonly initialize: JsonObject };
  /** The client's `initialize` params, whole; absent when there was no handshake. */
  readonly client?: { readonly initialize: JsonObject };
  /**
   * What the redaction rules cut; empty with `--keep-secrets` or when nothing matched. In the
   * file (version 2) each cut is on its message line; the reader gathers them here, in line order.
   */
  readonly redactions: readonly TapeRedaction[];
  /** Messages the source could not give whole; empty for a recorded tape. */
  readonly incomplete: readonly TapeIncomplete[];
}

/** Every later line: one JSON-RPC message as the server saw it. */
export interface TapeMessage {
  /** Marks a message line. */
  readonly kind: 'message';
  /** 1, 2, 3… in file order. */
  readonly seq: number;
  /** Milliseconds since the tape's first message (fractional allowed, never negative). */
  readonly t: number;
  /** Who sent it: `c2s` the client, `s2c` the server. */
  readonly dir: TapeDirection;
  /** The message as the server saw it (redacted where the header's `redactions` say). */
  readonly message: JsonRpcMessage;
  /**
   * For a response: the `seq` of its request. For a message sent during a call (progress,
   * cancellation, a server→client request or log line tied to it): the `seq` of that call's request.
   */
  readonly re?: number;
  /** The MEUP envelope id of the hop, when the source had one (trace export, record). */
  readonly envelope?: string;
  /** The MEUP context of the hop, when the source had one. */
  readonly context?: string;
}

/**
 * The last line: `{"kind":"end","messages":N}`. A tape without it was cut short (a crash, a disk
 * that filled, a copy that stopped): the reader refuses it rather than replay half a session.
 */
export interface TapeEnd {
  /** Marks the end line. */
  readonly kind: 'end';
  /** How many message lines the tape holds. */
  readonly messages: number;
}

/** A whole tape, read or built: its header and its message lines in `seq` order (the end line implied). */
export interface Tape {
  /** Line 1. */
  readonly header: TapeHeader;
  /** Every message line, `seq` 1, 2, 3… */
  readonly messages: readonly TapeMessage[];
  /**
   * Set only when the tape was read with `allowTruncated` and had no end line (a recording cut by
   * a crash): `messages` are its complete lines, and calls may lack their answers.
   */
  readonly truncated?: true;
}
