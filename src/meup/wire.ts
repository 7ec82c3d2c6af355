import type { MeupEnvelope, MeupWireEnvelope } from './types.js';

/**
 * The wire form of a valid envelope: `correlationId` becomes `correlation_id`, always an array,
 * and absent optional fields are omitted. (Decoding untrusted input is `decodeMeupEnvelope`.)
 */
export function toWire(envelope: MeupEnvelope): MeupWireEnvelope {
  const wire: MeupWireEnvelope = {
    protocol: envelope.protocol,
    id: envelope.id,
    ts: envelope.ts,
    from: envelope.from,
    kind: envelope.kind,
    payload: envelope.payload as Record<string, unknown>,
  };
  if (envelope.to !== undefined) wire.to = [...envelope.to];
  if (envelope.correlationId !== undefined) wire.correlation_id = [...envelope.correlationId];
  if (envelope.context !== undefined) wire.context = envelope.context;
  return wire;
}
