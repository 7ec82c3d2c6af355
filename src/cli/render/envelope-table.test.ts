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
        '6  03:04:05.010  ←    response      (tools/call)                    1    #2     server-a → gateway   #3           8.50ms  01JD0000000000000000000004',
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

  it('fits a width without cutting envelope ids: one short HOP, no CORRELATES, METHOD cut last', () => {
    const { records } = sampleTrace();
    const long = records.map((r) =>
      r.envelope.kind === 'mcp/notification'
        ? {
            ...r,
            envelope: {
              ...r.envelope,
              payload: { jsonrpc: '2.0', method: 'notifications/a-very-long-method-name-of-some-server' },
            },
          }
        : r,
    );
    const out = renderEnvelopeTable(long, { color: false, width: 110 }).trimEnd().split('\n');
    expect(out[0]).toMatch(
      /^#\s+TIME \(UTC\)\s+HOP\s+KIND\s+METHOD\s+RPC ID\s+CONTEXT\s+LATENCY\s+ENVELOPE$/,
    );
    expect(out.every((l) => l.length <= 110)).toBe(true);
    expect(out.slice(1).map((l) => l.split(/\s+/).at(-1))).toEqual(records.map((r) => r.envelope.id));
    expect(out[1]).toMatch(/client→gw\s+notif\s+notifications\/\S*…\s+session/);
    expect(out[3]).toMatch(/gw→a\s+request/);
    expect(out[7]).toMatch(/gw→client\s+response\s+\(tools\/call\)\s+7\s+#2\s+11\.0ms/);
  });
});
