/**
 * `switchboard import FILE` and `switchboard wrap FILE`: what people already have, a client's MCP
 * server list (Claude Desktop, Claude Code, Cursor: `mcpServers`; VS Code: `servers`), turned into
 * a `serve` configuration, or rewritten so that each server runs through `switchboard stdio`.
 * The mapping itself is `config/mcp-json-import.ts` and `config/mcp-json-wrap.ts`; this file reads
 * and writes the files and reports. Exit status: 0 done, 1 a server that cannot be mapped (the
 * message names it and the field), 2 a file that cannot be read or written.
 */
import { copyFile, readFile, rename, writeFile } from 'node:fs/promises';
import type { Command } from 'commander';
import { importMcpJson, parseMcpJson, renderUpstreamsYaml, serversOf } from '../../config/mcp-json-import.js';
import { unwrapServers, wrapServers } from '../../config/mcp-json-wrap.js';
import { SbErrorCode, SwitchboardError } from '../../errors/switchboard-error.js';
import { ioOf } from '../command-io.js';
import { addExamples } from '../help-text.js';

/** The file `wrap` keeps the original in, next to it. */
export function backupPathOf(file: string): string {
  return `${file}.switchboard-backup`;
}

function report(command: Command, error: unknown): void {
  const io = ioOf(command);
  const message = error instanceof Error ? error.message : String(error);
  io.err(`switchboard ${command.name()}: ${message}\n`);
  process.exitCode = error instanceof SwitchboardError && error.code === SbErrorCode.ConfigInvalid ? 1 : 2;
}

async function exists(path: string): Promise<boolean> {
  try {
    await readFile(path);
    return true;
  } catch {
    return false;
  }
}

export function registerImportCommands(program: Command): void {
  const importCommand = program
    .command('import')
    .summary("turn a client's MCP server list into switchboard.yaml upstreams")
    .description(
      "Reads the MCP servers of a client's JSON file (mcpServers: Claude Desktop, Claude Code .mcp.json, Cursor; " +
        'servers: VS Code .vscode/mcp.json) and prints them as the upstreams: section of switchboard.yaml ' +
        '(stdio: command, args, env, cwd; http and sse: url, headers). Variable references become env references; ' +
        'what only the client can resolve (VS Code inputs) is an error naming the server and field.',
    )
    .argument('<file>', "the client's JSON file")
    .option(
      '-o, --output <file>',
      'write the configuration to this file instead of stdout (refuses to overwrite)',
    )
    .action(async (file: string, options: { output?: string }, command: Command) => {
      try {
        const yaml = renderUpstreamsYaml(importMcpJson(await readFile(file, 'utf8'), file), file);
        if (options.output === undefined) {
          ioOf(command).out(yaml);
          return;
        }
        await writeFile(options.output, yaml, { flag: 'wx' });
        ioOf(command).err(
          `switchboard import: wrote ${options.output}; check it with: switchboard config check ${options.output}\n`,
        );
      } catch (error) {
        report(command, error);
      }
    });
  addExamples(importCommand, [
    'switchboard import ~/Library/Application\\ Support/Claude/claude_desktop_config.json',
    'switchboard import .mcp.json -o switchboard.yaml && switchboard config check switchboard.yaml',
    'switchboard serve --mcp-json .vscode/mcp.json',
  ]);

  const wrap = program
    .command('wrap')
    .summary("run every server of a client's MCP JSON through switchboard stdio")
    .description(
      "Rewrites a client's JSON file (mcpServers or servers) so that each stdio server runs as " +
        'switchboard stdio --name <name> -- <its command>, passing on the variables of its env. The original ' +
        'is kept next to it as <file>.switchboard-backup (on the first wrap). Idempotent: wrapped servers are left ' +
        'alone, and so are URL servers. --undo puts each server back as it was, keeping other edits.',
    )
    .argument('<file>', "the client's JSON file")
    .option('--undo', 'put back the servers this command wrapped')
    .option('--command <path>', 'the switchboard command to write (e.g. an absolute path)', 'switchboard')
    .action(async (file: string, options: { undo?: boolean; command: string }, command: Command) => {
      const io = ioOf(command);
      try {
        const text = await readFile(file, 'utf8');
        const parsed = parseMcpJson(text, file);
        const { servers } = serversOf(parsed, file);
        const result = options.undo ? unwrapServers(servers) : wrapServers(servers, options.command);
        for (const { name, reason } of result.skipped)
          io.err(`switchboard wrap: ${name}: left as it is (${reason})\n`);
        if (result.changed.length === 0) {
          io.err(`switchboard wrap: ${file} unchanged\n`);
          return;
        }
        const backup = backupPathOf(file);
        if (!options.undo && !(await exists(backup))) await copyFile(file, backup);
        // Written beside the file and renamed over it, so a client never reads half a file.
        const temporary = `${file}.switchboard-tmp`;
        await writeFile(temporary, `${JSON.stringify(parsed, null, 2)}\n`);
        await rename(temporary, file);
        io.out(
          `${options.undo ? 'unwrapped' : 'wrapped'} ${result.changed.join(', ')} in ${file}` +
            `${options.undo ? '' : ` (original kept in ${backup})`}\n`,
        );
      } catch (error) {
        report(command, error);
      }
    });
  addExamples(wrap, [
    'switchboard wrap .mcp.json',
    'switchboard wrap ~/.cursor/mcp.json --command /usr/local/bin/switchboard',
    'switchboard wrap .mcp.json --undo',
  ]);
}
