import { describe, expect, it } from 'vitest';
import { paramHeaderValues } from '../../../protocol/mcp/x-mcp-header.js';
import { modernRequestHeaders } from './modern-request-headers.js';

const REGION = [{ path: ['region'], name: 'Region', type: 'string' as const }];
const LIMIT = [{ path: ['limit'], name: 'Limit', type: 'integer' as const }];

function build(input: Partial<Parameters<typeof modernRequestHeaders>[0]> = {}) {
  return modernRequestHeaders({
    base: {},
    version: '2026-07-28',
    method: 'tools/list',
    params: {},
    ...input,
  });
}

describe('modernRequestHeaders', () => {
  it('sets the protocol headers, and the configured ones it does not own', () => {
    const built = build({
      base: {
        authorization: 'Bearer t',
        'mcp-method': 'forged',
        'mcp-name': 'forged',
        'mcp-param-x': 'forged',
      },
    });
    expect(built).toEqual({
      ok: true,
      headers: {
        authorization: 'Bearer t',
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-protocol-version': '2026-07-28',
        'mcp-method': 'tools/list',
      },
    });
  });

  it.each([
    ['tools/call', { name: 'get_weather' }, 'get_weather'],
    ['prompts/get', { name: 'review' }, 'review'],
    ['resources/read', { uri: 'file:///a b.txt' }, 'file:///a b.txt'],
    ['tasks/get', { taskId: 't-1' }, 't-1'],
    ['resources/read', { uri: 'file:///ünï' }, `=?base64?${Buffer.from('file:///ünï').toString('base64')}?=`],
    ['tools/call', { name: ' padded' }, `=?base64?${Buffer.from(' padded').toString('base64')}?=`],
  ])('mirrors %s params into Mcp-Name', (method, params, name) => {
    const built = build({ method, params });
    expect(built.ok && built.headers['mcp-name']).toBe(name);
  });

  it('sends no Mcp-Name for other methods, or when the field is missing', () => {
    const list = build({ method: 'tools/list', params: { name: 'x' } });
    expect(list.ok && 'mcp-name' in list.headers).toBe(false);
    const call = build({ method: 'tools/call', params: {} });
    expect(call.ok && 'mcp-name' in call.headers).toBe(false);
  });

  it('adds the computed Mcp-Param headers', () => {
    const built = build({
      method: 'tools/call',
      computed: paramHeaderValues(REGION, { region: 'us-west1' }),
    });
    expect(built.ok && built.headers['mcp-param-region']).toBe('us-west1');
  });

  it('forwards client Mcp-Param headers unchanged', () => {
    const built = build({
      method: 'tools/call',
      forwarded: { 'mcp-param-tenant': '=?base64?YWNtZQ==?=', 'Mcp-Param-Other': ' x ' },
    });
    expect(built.ok && built.headers).toMatchObject({
      'mcp-param-tenant': '=?base64?YWNtZQ==?=',
      'mcp-param-other': ' x ',
    });
  });

  it('accepts a forwarded header equal to the computed one, after decoding, and sends the computed one', () => {
    const computed = paramHeaderValues(REGION, { region: 'eu' });
    const built = build({
      method: 'tools/call',
      computed,
      forwarded: { 'mcp-param-region': '=?base64?ZXU=?=' },
    });
    expect(built.ok && built.headers['mcp-param-region']).toBe('eu');
    const numeric = build({
      method: 'tools/call',
      computed: paramHeaderValues(LIMIT, { limit: 42 }),
      forwarded: { 'mcp-param-limit': '42.0' },
    });
    expect(numeric.ok).toBe(true);
  });

  it('refuses a forwarded header that contradicts the arguments with -32020', () => {
    const built = build({
      method: 'tools/call',
      computed: paramHeaderValues(REGION, { region: 'eu' }),
      forwarded: { 'Mcp-Param-Region': 'us' },
    });
    expect(built).toEqual({
      ok: false,
      error: {
        code: -32020,
        message: 'Header mismatch: the client sent Mcp-Param-Region: us, but the arguments make it eu',
      },
    });
  });

  it.each([
    ['not an object', ['mcp-param-a', 'x'], /must be an object/],
    ['another header', { authorization: 'Bearer stolen' }, /only carry Mcp-Param-\* headers/],
    ['a bare prefix', { 'mcp-param-': 'x' }, /only carry Mcp-Param-\* headers/],
    ['a value with CR LF', { 'mcp-param-a': 'x\r\nInjected: 1' }, /no header can carry/],
    ['a value that is not a string', { 'mcp-param-a': 3 }, /no header can carry/],
    ['one name twice', { 'mcp-param-a': 'x', 'MCP-PARAM-A': 'y' }, /given twice/],
  ])('refuses forwarded headers with %s', (_why, forwarded, message) => {
    const built = build({ method: 'tools/call', forwarded });
    expect(built.ok).toBe(false);
    if (!built.ok) {
      expect(built.error.code).toBe(-32602);
      expect(built.error.message).toMatch(message);
    }
  });

  it('refuses a method no header can carry', () => {
    const built = build({ method: 'a\r\nb' });
    expect(built.ok).toBe(false);
  });
});
