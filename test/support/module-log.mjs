// Loaded with `node --import <this file>`: logs the URL of every module the process resolves
// through the ESM loader, one a line, to the file named by MODULE_LOG (test/otel-off.test.ts).
import { register } from 'node:module';

register('./module-log-hooks.mjs', import.meta.url, { data: { file: process.env.MODULE_LOG } });
