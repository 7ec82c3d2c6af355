import { describe, expect, it } from 'vitest';
import { renderEnvelopeTable } from './envelope-table.js';
import { sampleTrace } from './test-support/trace-fixture.js';

describe('renderEnvelopeTable', () => {
  it('numbers rows and shows time, arrow, kind, method, id, indented context, correlation and latency', () => {
    const { records } = sampleTrace();
    expect(renderEnvelopeTable(records, { color: false })).toBe(
      [
        '#  TIME (UTC)    DIR  KIND          METHOD                     RPC ID  CONTEXT  HOP                  CORRELATES  LATENCY  ENVELOPE',
        '1  03:04:05.000  →    notification  notifications/initialized          s1       client-s1 → gateway                       01JD0000000000000000000007',
        '2  03:04:05.000  →    request       tools/call                      7    #2     client-s1 → gateway                       01JD0000000000000000000001',
        '3  03:04:05.001  →    request       tools/call                      1    #2     gateway → server-a   #2                   01JD0000000000000000000002',
        '4  03:04:05.005  ←    notification  notifications/progress               #2     server-a → *         #2                   01JD0000000000000000000003',
        '5  03:04:05.006  ←    request       sampling/createMessage          0      #5   server-a → *                              01JD0000000000000000000006',
        '6  03:04:05.010  ←    response      (tools/call)                    1    #2     server-a → gateway   #3           9.00ms  01JD0000000000000000000004',
        '7  03:04:05.011  ←    response      (tools/call)                    7    #2     gateway → client-s1  #2,#6        11.0ms  01JD0000000000000000000005',
        '',
      ].join('\n'),
    );
  });

  it('shows ids outside the table shortened, and "-" for an envelope without context', () => {
    const { records } = sampleTrace();
    const out = renderEnvelopeTable(records.slice(5), { color: false }).split('\n');
    expect(out[1]).toContain('…00000002');
    expect(out[2]).toContain('…00000001,#1');
    // Without the requests in view there is no latency to show.
    expect(out[2]).not.toMatch(/ms /);
    const bare = { ...records[0]!, envelope: { ...records[0]!.envelope, context: undefined } };
    expect(renderEnvelopeTable([bare], { color: false }).split('\n')[1]).toMatch(/ {2}- {2}/);
  });

  it('colours only when asked', () => {
    const { records } = sampleTrace();
    const ESC = String.fromCharCode(27);
    expect(renderEnvelopeTable(records, { color: false })).not.toContain(ESC);
    expect(renderEnvelopeTable(records, { color: true })).toContain(`${ESC}[36mrequest`);
  });
});
