/**
 * The help of every command, read as a whole (issue 22): each command shows examples of itself,
 * is in the README's command reference, and its texts follow one style: summaries and option
 * descriptions start in lower case like commander's own ("display help for command"), without a
 * final full stop, and no description carries its own line breaks (commander wraps them to the
 * terminal, and a hard break in the middle of a wrapped paragraph reads as a mistake).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { buildProgram } from './program.js';
import { runCli } from './test-support/run-cli.js';

const README = readFileSync(join(import.meta.dirname, '../../README.md'), 'utf8');

/** The README from "## Commands" to the next level-2 heading. */
function commandReference(): string {
  const start = README.indexOf('\n## Commands');
  expect(start).toBeGreaterThan(0);
  const end = README.indexOf('\n## ', start + 1);
  return README.slice(start, end < 0 ? undefined : end);
}

/** Every command below the program, with its path of names (the implicit `help` left out). */
function commands(parent: Command, path: readonly string[] = []): { path: string[]; command: Command }[] {
  return parent.commands
    .filter((c) => c.name() !== 'help')
    .flatMap((c) => {
      const own = [...path, c.name()];
      return [{ path: own, command: c }, ...commands(c, own)];
    });
}

const all = commands(buildProgram());
const leaves = all.filter((c) => c.command.commands.length === 0);

describe('switchboard --help, command by command', () => {
  it('has commands to check', () => {
    expect(leaves.length).toBeGreaterThan(10);
  });

  it.each(all.map((c) => [c.path.join(' '), c] as const))(
    '%s: is in the README command reference',
    (name) => {
      expect(commandReference()).toContain(`switchboard ${name}`);
    },
  );

  it.each(leaves.map((c) => [c.path.join(' '), c] as const))(
    '%s: shows an example of itself in --help',
    async (name, { path }) => {
      const r = await runCli([...path, '--help']);
      expect(r.code).toBe(0);
      const examples = r.out.slice(r.out.indexOf('\nExamples:\n'));
      expect(r.out).toContain('\nExamples:\n');
      expect(examples.split('\n').some((line) => line.startsWith(`  switchboard ${name}`))).toBe(true);
    },
  );

  it.each(all.map((c) => [c.path.join(' '), c] as const))(
    '%s: summary and options in one style, no line breaks of their own',
    (_name, { command }) => {
      const summary = command.summary() || command.description();
      expect(summary).toMatch(/^[a-z]/);
      expect(summary).not.toMatch(/\.$/);
      expect(command.description()).not.toContain('\n');
      for (const option of command.options) {
        expect(option.description, option.flags).toMatch(/^[a-z<`(]/);
        expect(option.description, option.flags).not.toMatch(/\.$/);
      }
    },
  );
});
