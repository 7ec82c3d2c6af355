#!/usr/bin/env node
// The floor of a Node.js process (on its streams) placed between an MCP client and a stdio server: spawns the
// server and pipes bytes both ways (stdin -> child stdin, child stdout -> stdout) without framing,
// parsing or anything else. The stdio suite measures it next to `switchboard stdio` so that the
// gateway's own cost can be told apart from the cost of two more pipe hops through a Node process.
//   node bench/lib/null-relay.mjs <command> [args...]
import { spawn } from 'node:child_process';

const [command, ...args] = process.argv.slice(2);
const child = spawn(command, args, { stdio: ['pipe', 'pipe', 'inherit'] });
process.stdin.pipe(child.stdin);
child.stdout.pipe(process.stdout);
child.stdin.on('error', () => {});
process.stdout.on('error', () => process.exit(0));
process.stdin.on('end', () => child.stdin.end());
child.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
