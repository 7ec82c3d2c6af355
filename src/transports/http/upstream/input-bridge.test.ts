import { describe, expect, it } from 'vitest';
import {
  InputRound,
  isInputRequired,
  legacyInputRequest,
  readInputRequired,
  retryParams,
} from './input-bridge.js';

const ELICIT = {
  method: 'elicitation/create',
  params: { message: 'Name?', requestedSchema: { type: 'object' } },
};

describe('readInputRequired', () => {
  it('reads the input requests in order, and the state', () => {
    const result = {
      resultType: 'input_required',
      inputRequests: { name: ELICIT, roots: { method: 'roots/list' } },
      requestState: 'opaque',
    };
    expect(isInputRequired(result)).toBe(true);
    expect(readInputRequired(result)).toEqual({
      ok: true,
      requests: [
        { key: 'name', ...ELICIT },
        { key: 'roots', method: 'roots/list' },
      ],
      requestState: 'opaque',
    });
  });

  it('accepts a state alone', () => {
    expect(readInputRequired({ resultType: 'input_required', requestState: 's' })).toEqual({
      ok: true,
      requests: [],
      requestState: 's',
    });
  });

  it.each([
    [{}, /neither inputRequests nor requestState/],
    [{ inputRequests: [] }, /not an object/],
    [{ inputRequests: { a: { params: {} } } }, /"a" has no method/],
    [{ inputRequests: { a: { method: 'x', params: [1] } } }, /not an object/],
    [{ requestState: 7 }, /requestState is not a string/],
  ])('refuses a malformed result %#', (result, reason) => {
    const read = readInputRequired({ resultType: 'input_required', ...result });
    expect(read.ok).toBe(false);
    if (!read.ok) expect(read.reason).toMatch(reason);
  });

  it('is not fooled by complete results', () => {
    expect(isInputRequired({ resultType: 'complete' })).toBe(false);
    expect(isInputRequired({ content: [] })).toBe(false);
  });
});

describe('legacyInputRequest', () => {
  it('makes a server->client request, adding the elicitationId a URL elicitation needs in 2025-11-25', () => {
    expect(legacyInputRequest('b-1', { key: 'k', ...ELICIT })).toEqual({
      jsonrpc: '2.0',
      id: 'b-1',
      ...ELICIT,
    });
    expect(
      legacyInputRequest(5, {
        key: 'k',
        method: 'elicitation/create',
        params: { mode: 'url', message: 'Go', url: 'https://example.com' },
      }).params,
    ).toEqual({ mode: 'url', message: 'Go', url: 'https://example.com', elicitationId: '5' });
    expect(legacyInputRequest(6, { key: 'k', method: 'roots/list' })).toEqual({
      jsonrpc: '2.0',
      id: 6,
      method: 'roots/list',
    });
  });
});

describe('retryParams', () => {
  it("replaces the last round's answers and state, and sends no state when none was given", () => {
    const original = { name: 't', arguments: {}, _meta: { progressToken: 1 } };
    expect(retryParams(original, { a: { action: 'accept' } }, 's1')).toEqual({
      ...original,
      inputResponses: { a: { action: 'accept' } },
      requestState: 's1',
    });
    expect(retryParams({ ...original, inputResponses: { old: 1 }, requestState: 'old' }, { b: 2 })).toEqual({
      ...original,
      inputResponses: { b: 2 },
    });
    expect(retryParams(original, {}, 's')).toEqual({ ...original, requestState: 's' });
  });
});

describe('InputRound', () => {
  it('collects answers by key until none is waiting', () => {
    const round = new InputRound('s');
    round.add('k1', 'b1', { key: 'name', method: 'elicitation/create' });
    round.add('k2', 'b2', { key: 'roots', method: 'roots/list' });
    expect(round.get('k1')).toMatchObject({ id: 'b1', key: 'name' });
    expect(round.answer('k2', { roots: [] })).toBe(false);
    expect(round.answer('k2', { roots: [] })).toBe(false);
    expect(round.answer('k1', { action: 'decline' })).toBe(true);
    expect(round.responses).toEqual({ name: { action: 'decline' }, roots: { roots: [] } });
  });

  it('drains what is still waiting', () => {
    const round = new InputRound(undefined);
    round.add('k1', 'b1', { key: 'a', method: 'roots/list' });
    round.add('k2', 'b2', { key: 'b', method: 'roots/list' });
    round.remove('k1');
    expect(round.drain()).toEqual([{ key: 'k2', id: 'b2' }]);
    expect(round.drain()).toEqual([]);
  });
});
