import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { FlowGate } from './flow-gate.js';

describe('FlowGate', () => {
  it('is open until someone holds it closed, and again once every holder has let go', () => {
    const gate = new FlowGate();
    const heard: boolean[] = [];
    gate.watch((open) => heard.push(open));
    expect(gate.open).toBe(true);
    gate.close('stdout');
    gate.close('upstream-stdin');
    expect(gate.open).toBe(false);
    gate.reopen('stdout');
    expect(gate.open).toBe(false);
    expect(gate.isHeldBy('upstream-stdin')).toBe(true);
    gate.reopen('upstream-stdin');
    expect(gate.open).toBe(true);
    expect(heard).toEqual([false, true]);
  });

  it('stops telling a watcher once it unsubscribed', () => {
    const gate = new FlowGate();
    const heard: boolean[] = [];
    const stop = gate.watch((open) => heard.push(open));
    gate.close('a');
    stop();
    gate.reopen('a');
    expect(heard).toEqual([false]);
  });

  it('matches a model: open iff no holder, and watchers hear exactly the transitions', () => {
    const op = fc.record({ close: fc.boolean(), holder: fc.constantFrom('a', 'b', 'c') });
    fc.assert(
      fc.property(fc.array(op, { maxLength: 60 }), (ops) => {
        const gate = new FlowGate();
        const heard: boolean[] = [];
        gate.watch((open) => heard.push(open));
        const model = new Set<string>();
        const expected: boolean[] = [];
        for (const { close, holder } of ops) {
          const wasOpen = model.size === 0;
          if (close) {
            gate.close(holder);
            model.add(holder);
          } else {
            gate.reopen(holder);
            model.delete(holder);
          }
          const isOpen = model.size === 0;
          if (wasOpen !== isOpen) expected.push(isOpen);
          expect(gate.open).toBe(isOpen);
          for (const h of ['a', 'b', 'c']) expect(gate.isHeldBy(h)).toBe(model.has(h));
        }
        expect(heard).toEqual(expected);
      }),
    );
  });
});
