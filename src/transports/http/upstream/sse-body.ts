/**
 * Feeding an HTTP response body to an SSE parser as it arrives. One function for every SSE stream
 * the upstream transports read (POST answers, resumed streams, the GET stream, the 2024-11-05
 * stream), so that they all end the same way: the parser is finished and the caller is told
 * whether the stream ended or broke.
 */
import type { SseParser } from '../sse/sse-parser.js';
import type { ResponseBody } from './response-body.js';

/** How an SSE response body ended. */
export type SseEnd =
  /** The server ended the response. */
  | { readonly kind: 'ended' }
  /** The connection broke, timed out or was aborted. */
  | { readonly kind: 'broken'; readonly error: unknown };

/** Reads `body` to its end through `parser`. Never rejects. */
export async function pumpSse(body: ResponseBody, parser: SseParser): Promise<SseEnd> {
  try {
    for await (const chunk of body as AsyncIterable<Buffer>) parser.push(chunk);
    parser.end();
    return { kind: 'ended' };
  } catch (error) {
    parser.end();
    return { kind: 'broken', error };
  }
}

/** Whether an event's data carries no message: the 2025-11-25 priming event, or blank data. */
export function isEmptyData(data: string): boolean {
  return data.length === 0 || !/\S/.test(data);
}
