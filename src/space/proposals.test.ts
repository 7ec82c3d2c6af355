import { describe, expect, it } from 'vitest';
import { ProposalBook } from './proposals.js';

const add = (book: ProposalBook, id: string, proposer = 'p') =>
  book.add({ id, proposer, method: 'tools/call', params: {} });

describe('ProposalBook', () => {
  it('tracks a proposal from open to closed, once', () => {
    const book = new ProposalBook(10);
    add(book, 'a');
    expect(book.get('a')?.state).toBe('open');
    book.close('a', 'rejected', 'r1');
    book.close('a', 'fulfilled', 'f1');
    expect(book.get('a')).toMatchObject({ state: 'rejected', closedBy: 'r1' });
  });

  it('forgets the oldest closed proposal first when full, then the oldest open one', () => {
    const book = new ProposalBook(3);
    add(book, 'a');
    add(book, 'b');
    book.close('b', 'withdrawn', 'w');
    add(book, 'c');
    add(book, 'd');
    expect([book.has('a'), book.has('b'), book.has('c'), book.has('d')]).toEqual([true, false, true, true]);
    add(book, 'e');
    expect([book.has('a'), book.has('c'), book.has('d'), book.has('e')]).toEqual([false, true, true, true]);
    expect(book.size).toBe(3);
  });

  it('says whether a proposer has an open proposal', () => {
    const book = new ProposalBook(10);
    add(book, 'a', 'client-1');
    expect(book.hasOpenFrom('client-1')).toBe(true);
    book.close('a', 'fulfilled', 'f');
    expect(book.hasOpenFrom('client-1')).toBe(false);
  });
});
