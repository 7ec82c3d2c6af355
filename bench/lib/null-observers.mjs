// Loaded into a gateway with `node --import <this file> <cli> ...` (bench/gc-observers.mjs): every
// observer the gateway registers with its router (`Observations.add`, src/core/observations.ts) is
// replaced by one with the same name whose every hook does nothing. The router's observation path
// runs in full (`Observations.active` is true: it builds what observers are handed and calls them),
// while the observers themselves do nothing: what the core path costs apart from what the metrics
// do with it. A bench instrument only; the gateway's own code is not changed.
//
// The module patched is the one the measured CLI imports: `dist/core/observations.js` beside the
// `dist/cli/main.js` this process runs (process.argv[1]), so both load the same module instance.
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';

const cli = process.argv[1];
if (cli === undefined) throw new Error('null-observers.mjs: no script to run (process.argv[1])');
const { Observations } = await import(pathToFileURL(join(dirname(cli), '../core/observations.js')).href);
const add = Observations.prototype.add;
Observations.prototype.add = function addNull(observer) {
  const nothing = () => {};
  return add.call(this, {
    name: observer.name,
    callStarted: nothing,
    callEnded: nothing,
    upstreamStarted: nothing,
    upstreamEnded: nothing,
    sessionOpened: nothing,
    sessionClosed: nothing,
    linkChanged: nothing,
  });
};
