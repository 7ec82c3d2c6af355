#!/usr/bin/env node
// A local OTLP/HTTP receiver for the benchmarks: accepts every export (any path: /v1/traces,
// /v1/metrics, /v1/logs; protobuf or JSON), reads it whole, counts it, and answers success (an empty
// ExportServiceResponse: no bytes for protobuf, `{}` for JSON). It decodes nothing: the tests have
// a receiver that checks what is exported (issue 21); this one only has to be cheap and honest, so
// that what the gateway pays for tracing is measured, not a slow collector. It runs in its own
// process, so that its work does not share the load client's event loop.
//   node bench/lib/otlp-sink.mjs   -> prints "otlp sink listening on http://127.0.0.1:PORT"
//   GET /stats                     -> { requests, bytes, byPath: { path: { requests, bytes } } }
import { createServer } from 'node:http';

const stats = { requests: 0, bytes: 0, byPath: {} };

const server = createServer((req, res) => {
  if (req.method === 'GET' && req.url === '/stats') {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify(stats));
    return;
  }
  let bytes = 0;
  req.on('data', (chunk) => {
    bytes += chunk.length;
  });
  req.on('end', () => {
    const path = (req.url ?? '/').split('?')[0];
    stats.requests++;
    stats.bytes += bytes;
    stats.byPath[path] ??= { requests: 0, bytes: 0 };
    const entry = stats.byPath[path];
    entry.requests++;
    entry.bytes += bytes;
    const json = String(req.headers['content-type'] ?? '').includes('json');
    res.writeHead(200, { 'content-type': json ? 'application/json' : 'application/x-protobuf' });
    res.end(json ? '{}' : undefined);
  });
});
server.keepAliveTimeout = 30_000;
server.listen(0, '127.0.0.1', () => {
  console.log(`otlp sink listening on http://127.0.0.1:${server.address().port}`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
