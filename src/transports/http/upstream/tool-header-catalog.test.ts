import { describe, expect, it } from 'vitest';
import { MemoryLogger } from '../../../observe/logger.js';
import { ToolHeaderCatalog } from './tool-header-catalog.js';

const GOOD = {
  name: 'good',
  inputSchema: { type: 'object', properties: { region: { type: 'string', 'x-mcp-header': 'Region' } } },
};
const PLAIN = { name: 'plain', inputSchema: { type: 'object' } };
const BAD = {
  name: 'bad',
  inputSchema: { type: 'object', properties: { n: { type: 'number', 'x-mcp-header': 'N' } } },
};

function catalog(list: () => Promise<unknown[]>) {
  const logger = new MemoryLogger();
  let listings = 0;
  const tools = new ToolHeaderCatalog(
    async () => {
      listings++;
      return list();
    },
    logger,
    'up',
  );
  return { tools, logger, listings: () => listings };
}

describe('ToolHeaderCatalog', () => {
  it('hands on a valid page as it is, and drops invalid tools with a warning', () => {
    const { tools, logger } = catalog(async () => []);
    const page = [GOOD, PLAIN];
    expect(tools.learn(page)).toBe(page);
    expect(tools.learn([GOOD, BAD, PLAIN])).toEqual([GOOD, PLAIN]);
    expect(tools.learn([BAD, GOOD])).toEqual([GOOD]);
    expect(logger.entries.filter((e) => e.level === 'warn').map((e) => e.fields.tool)).toEqual([
      'bad',
      'bad',
    ]);
  });

  it('knows learnt tools without listing, and lists once for an unknown one', async () => {
    const { tools, listings } = catalog(async () => [GOOD, BAD]);
    tools.learn([PLAIN]);
    expect(await tools.lookup('plain')).toEqual({ ok: true, headers: [] });
    expect(listings()).toBe(0);
    expect(await tools.lookup('good')).toMatchObject({ ok: true, headers: [{ name: 'Region' }] });
    expect(await tools.lookup('bad')).toMatchObject({ ok: false });
    expect(await tools.lookup('missing')).toBeUndefined();
    expect(listings()).toBe(1);
  });

  it('shares one listing between concurrent lookups, and lists again after forget', async () => {
    const { tools, listings } = catalog(async () => [GOOD]);
    const [a, b] = await Promise.all([tools.lookup('good'), tools.lookup('other')]);
    expect(a?.ok).toBe(true);
    expect(b).toBeUndefined();
    expect(listings()).toBe(1);
    tools.forget();
    await tools.lookup('good');
    expect(listings()).toBe(2);
  });

  it('survives a failed listing, and tries again on the next lookup', async () => {
    let fail = true;
    const { tools, logger, listings } = catalog(async () => {
      if (fail) throw new Error('boom');
      return [GOOD];
    });
    expect(await tools.lookup('good')).toBeUndefined();
    expect(logger.entries.some((e) => e.fields.err === 'boom')).toBe(true);
    fail = false;
    expect((await tools.lookup('good'))?.ok).toBe(true);
    expect(listings()).toBe(2);
  });
});
