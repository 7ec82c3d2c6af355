import { describe, expect, it } from 'vitest';
import { sameFilter, subscriptionFilter, untagged } from './listen-stream.js';

describe('subscriptionFilter', () => {
  it('asks for what the capabilities announce, and the URIs when subscriptions are supported', () => {
    const capabilities = {
      tools: { listChanged: true },
      prompts: {},
      resources: { subscribe: true, listChanged: true },
    };
    expect(subscriptionFilter(capabilities, new Set())).toEqual({
      toolsListChanged: true,
      resourcesListChanged: true,
    });
    expect(subscriptionFilter(capabilities, new Set(['b://2', 'a://1']))).toEqual({
      toolsListChanged: true,
      resourcesListChanged: true,
      resourceSubscriptions: ['a://1', 'b://2'],
    });
    expect(subscriptionFilter({ resources: {} }, new Set(['a://1']))).toBeUndefined();
    expect(subscriptionFilter({}, new Set())).toBeUndefined();
    expect(subscriptionFilter(undefined, new Set())).toBeUndefined();
  });

  it('compares filters by content', () => {
    expect(sameFilter({ toolsListChanged: true }, { toolsListChanged: true })).toBe(true);
    expect(sameFilter({ toolsListChanged: true }, undefined)).toBe(false);
    expect(sameFilter(undefined, undefined)).toBe(true);
  });
});

describe('untagged', () => {
  it('removes the subscription id, and an _meta left empty', () => {
    expect(
      untagged({
        jsonrpc: '2.0',
        method: 'notifications/resources/updated',
        params: { uri: 'a://1', _meta: { 'io.modelcontextprotocol/subscriptionId': 'l-1' } },
      }),
    ).toEqual({ jsonrpc: '2.0', method: 'notifications/resources/updated', params: { uri: 'a://1' } });
    expect(
      untagged({
        jsonrpc: '2.0',
        method: 'x',
        params: { _meta: { 'io.modelcontextprotocol/subscriptionId': 1, other: true } },
      }),
    ).toEqual({ jsonrpc: '2.0', method: 'x', params: { _meta: { other: true } } });
    const plain = { jsonrpc: '2.0', method: 'x' };
    expect(untagged(plain)).toBe(plain);
  });
});
