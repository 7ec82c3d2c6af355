/**
 * Reading HTTP response bodies from an upstream without ever holding more than a bound: JSON
 * answers up to the message limit, error bodies up to a few kilobytes (only to say what went wrong),
 * everything else discarded so the keep-alive connection can be reused.
 */
import type { Dispatcher } from 'undici';

/** An undici response body. */
export type ResponseBody = Dispatcher.ResponseData['body'];
/** Response headers as undici gives them (lower-cased names). */
export type ResponseHeaders = Dispatcher.ResponseData['headers'];

/** The outcome of reading a whole body: its text, or why there is none. */
export type BodyText =
  | { readonly kind: 'text'; readonly text: string }
  /** The body outgrew the limit; it was abandoned after `bytes` bytes. */
  | { readonly kind: 'oversized'; readonly bytes: number }
  /** The connection broke while the body was read. */
  | { readonly kind: 'failed'; readonly error: unknown };

/** The first value of a response header, if present. */
export function headerValue(headers: ResponseHeaders, name: string): string | undefined {
  const value = headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/** The media type of a response, lower-cased and without parameters (`''` when absent). */
export function mediaTypeOf(headers: ResponseHeaders): string {
  const value = headerValue(headers, 'content-type');
  if (value === undefined) return '';
  const semicolon = value.indexOf(';');
  return (semicolon === -1 ? value : value.slice(0, semicolon)).trim().toLowerCase();
}

/**
 * Reads a whole body as UTF-8 text, giving up (and destroying the body) as soon as it exceeds
 * `limit` bytes. `declaredLength` (the Content-Length) settles an oversized body before reading it
 * and lets a body within bounds be read in one go. A leading BOM is dropped.
 */
export async function readBodyText(
  body: ResponseBody,
  limit: number,
  declaredLength?: number,
): Promise<BodyText> {
  if (declaredLength !== undefined) {
    if (declaredLength > limit) {
      body.destroy();
      return { kind: 'oversized', bytes: declaredLength };
    }
    // The length is known and within bounds: undici's own reader is the fastest way.
    try {
      const text = await body.text();
      return { kind: 'text', text: text.charCodeAt(0) === 0xfeff ? text.slice(1) : text };
    } catch (error) {
      return { kind: 'failed', error };
    }
  }
  const chunks: Buffer[] = [];
  let bytes = 0;
  try {
    for await (const chunk of body as AsyncIterable<Buffer>) {
      bytes += chunk.length;
      if (bytes > limit) {
        body.destroy();
        return { kind: 'oversized', bytes };
      }
      chunks.push(chunk);
    }
  } catch (error) {
    return { kind: 'failed', error };
  }
  const text =
    chunks.length === 1 ? chunks[0]!.toString('utf8') : Buffer.concat(chunks, bytes).toString('utf8');
  return { kind: 'text', text: text.charCodeAt(0) === 0xfeff ? text.slice(1) : text };
}

const ERROR_BODY_LIMIT = 4096;
const DETAIL_CHARS = 200;

/**
 * What an error body says, in a few words: the JSON-RPC error message when the body is one (as MCP
 * servers send with their 4xx), else its first characters. Reads at most 4 KiB.
 */
export async function readErrorDetail(body: ResponseBody): Promise<string | undefined> {
  const read = await readBodyText(body, ERROR_BODY_LIMIT);
  if (read.kind !== 'text') return undefined;
  const text = read.text.trim();
  if (text.length === 0) return undefined;
  try {
    const value = JSON.parse(text) as unknown;
    const error =
      typeof value === 'object' && value !== null ? (value as { error?: unknown }).error : undefined;
    const message =
      typeof error === 'object' && error !== null ? (error as { message?: unknown }).message : undefined;
    if (typeof message === 'string') return clip(message);
  } catch {
    // Not JSON: the text itself says it.
  }
  return clip(text);
}

/** The Content-Length of a response, when it is a valid number. */
export function declaredLengthOf(headers: ResponseHeaders): number | undefined {
  const value = headerValue(headers, 'content-length');
  if (value === undefined) return undefined;
  const length = Number(value);
  return Number.isSafeInteger(length) && length >= 0 ? length : undefined;
}

/** Throws the rest of a body away; the connection is kept when the rest is small. */
export function discardBody(body: ResponseBody): void {
  body.dump().catch(() => {});
}

function clip(text: string): string {
  return text.length > DETAIL_CHARS ? `${text.slice(0, DETAIL_CHARS - 3)}...` : text;
}
