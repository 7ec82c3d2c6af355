import { describe, expect, it } from 'vitest';
import { GrantBook } from './grants.js';

describe('GrantBook', () => {
  it('keeps grants by id and recipient, compiled', () => {
    const book = new GrantBook();
    book.add({ id: 'g1', recipient: 'bob', granter: 'alice', capabilities: [{ kind: 'chat' }] });
    book.add({ id: 'g2', recipient: 'carol', granter: 'alice', capabilities: [{ kind: 'x' }] });
    expect(book.of('bob').map((g) => g.id)).toEqual(['g1']);
    expect(book.holds('carol')).toBe(true);
    expect(book.get('g1')?.compiled[0]?.matches({ kind: 'chat', payload: {} })).toBe(true);
  });

  it('revokes a grant only for its recipient', () => {
    const book = new GrantBook();
    book.add({ id: 'g1', recipient: 'bob', granter: 'alice', capabilities: [{ kind: 'chat' }] });
    expect(book.revoke('carol', 'g1')).toBe(false);
    expect(book.revoke('bob', 'g1')).toBe(true);
    expect(book.holds('bob')).toBe(false);
  });

  it('revokes capabilities by their canonical form across grants, dropping emptied grants', () => {
    const book = new GrantBook();
    book.add({
      id: 'g1',
      recipient: 'bob',
      granter: 'a',
      capabilities: [{ kind: 'k', payload: { a: 1, b: 2 } }, { kind: 'z' }],
    });
    book.add({
      id: 'g2',
      recipient: 'bob',
      granter: 'a',
      capabilities: [{ payload: { b: 2, a: 1 }, kind: 'k' }],
    });
    expect(book.revokeCapabilities('bob', [{ kind: 'k', payload: { b: 2, a: 1 } }])).toBe(2);
    expect(book.has('g2')).toBe(false);
    expect(book.get('g1')?.capabilities).toEqual([{ kind: 'z' }]);
    expect(book.get('g1')?.compiled.map((c) => c.matches({ kind: 'k', payload: { a: 1, b: 2 } }))).toEqual([
      false,
    ]);
    expect(book.revokeCapabilities('bob', [{ kind: 'nothing' }])).toBe(0);
  });

  it('says when it is full', () => {
    const book = new GrantBook(1);
    book.add({ id: 'g1', recipient: 'bob', granter: 'a', capabilities: [{ kind: 'x' }] });
    expect(book.full).toBe(true);
  });
});
