import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import {
  currentClientId,
  currentRequestId,
  currentRequestScope,
  runInRequestScope,
} from './request-scope.js';

describe('request scope', () => {
  it('is empty outside any scope', () => {
    expect(currentRequestScope()).toBeUndefined();
    expect(currentRequestId()).toBeUndefined();
    expect(currentClientId()).toBeUndefined();
  });

  it('exposes the bounded ids inside the scope and resets after it', () => {
    const result = runInRequestScope({ requestId: 7, clientId: '  session-a  ' }, () => {
      expect(currentRequestId()).toBe('7');
      expect(currentClientId()).toBe('session-a');
      expect(Object.isFrozen(currentRequestScope())).toBe(true);
      return 'done';
    });
    expect(result).toBe('done');
    expect(currentRequestScope()).toBeUndefined();
  });

  it('bounds hostile ids instead of throwing', () => {
    const hostile = {
      toString(): string {
        throw new Error('no');
      },
    };
    runInRequestScope({ requestId: hostile, clientId: 'x'.repeat(1000) }, () => {
      expect(currentRequestId()).toBeUndefined();
      expect(currentClientId()).toBe('x'.repeat(128));
    });
  });

  it('nests: inner ids shadow, missing ones are inherited, null clears, and the outer scope returns', () => {
    runInRequestScope({ clientId: 'conn-1' }, () => {
      expect(currentRequestScope()).toEqual({ requestId: undefined, clientId: 'conn-1' });
      runInRequestScope({ requestId: 'r1' }, () => {
        expect(currentRequestScope()).toEqual({ requestId: 'r1', clientId: 'conn-1' });
        runInRequestScope({ requestId: 'r2', clientId: null }, () => {
          expect(currentRequestScope()).toEqual({ requestId: 'r2', clientId: undefined });
        });
        expect(currentRequestId()).toBe('r1');
      });
      expect(currentRequestId()).toBeUndefined();
      expect(currentClientId()).toBe('conn-1');
    });
    expect(currentRequestScope()).toBeUndefined();
  });

  it('keeps each concurrent async task on its own ids across awaits', async () => {
    const seen = await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        runInRequestScope({ requestId: i, clientId: `client-${i % 3}` }, async () => {
          const before = currentRequestId();
          await sleep((i * 7) % 11);
          await Promise.resolve();
          const after = currentRequestId();
          return { i, before, after, client: currentClientId() };
        }),
      ),
    );
    for (const { i, before, after, client } of seen) {
      expect(before).toBe(String(i));
      expect(after).toBe(String(i));
      expect(client).toBe(`client-${i % 3}`);
    }
    expect(currentRequestScope()).toBeUndefined();
  });

  it('carries the scope into callbacks scheduled inside it', async () => {
    const fromTimer = await new Promise<string | undefined>((resolve) => {
      runInRequestScope({ requestId: 'timer' }, () => {
        setTimeout(() => resolve(currentRequestId()), 1);
      });
    });
    expect(fromTimer).toBe('timer');
  });

  it('propagates a throw from the callback and still resets', () => {
    expect(() =>
      runInRequestScope({ requestId: 'boom' }, () => {
        throw new Error('inner');
      }),
    ).toThrow('inner');
    expect(currentRequestScope()).toBeUndefined();
  });
});
