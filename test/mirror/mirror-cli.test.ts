import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import type { Mirror } from '../../src/index.js';
import { cli, endLeftovers, startTether } from '../cli/cli-helpers.js';
import { login, readFeed } from './mirror-client.js';

const dir = mkdtempSync(join(tmpdir(), 'tether-mirror-cli-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
afterEach(endLeftovers);

// A mirror as a command printed it: its URL, and the origin without the code.
const printedMirror = (text: string): Mirror => {
  const url = /http:\/\/127\.0\.0\.1:\d+\/\?code=\S+/.exec(text)?.[0];
  if (url === undefined) throw new Error(`no mirror URL in: ${text}`);
  return { url, origin: new URL(url).origin, close: async () => {} };
};

describe('the mirror from the command line', () => {
  it('V3: tether view serves a recorded log (every fact, then the end) and stops on SIGTERM', async () => {
    const log = join(dir, 'two.jsonl');
    const facts = [
      { v: 1, seq: 1, ts: 1, runtime: 'rt_a', type: 'runtime.started', pid: 1, containment: 'marker' },
      { v: 1, seq: 2, ts: 2, runtime: 'rt_a', type: 'runtime.disposed' },
    ];
    writeFileSync(log, `${facts.map((f) => JSON.stringify(f)).join('\n')}\nnot a fact\n`);
    const view = startTether(['view', log]);
    expect(await view.printed('Ctrl-C stops it.')).toBe(true);
    expect(view.stdout()).toContain('1 lines were not facts');
    const mirror = printedMirror(view.stdout());
    const seen = await readFeed(mirror, await login(mirror), (f) => f.type === 'runtime.disposed');
    expect(seen).toEqual(facts);
    view.child.kill('SIGTERM');
    expect(await view.exited).toBe(0);
  });

  it('V2: tether mcp --serve prints the mirror of its runtime on stderr, beside the protocol', async () => {
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [cli, 'mcp', '--serve'],
      stderr: 'pipe',
    });
    let stderr = '';
    const printed = new Promise<void>((resolve) => {
      transport.stderr?.on('data', (chunk: Buffer) => {
        stderr += chunk.toString('utf8');
        if (stderr.includes('code=')) resolve();
      });
    });
    const client = new Client({ name: 'tether-mirror-test', version: '1.0.0' });
    await client.connect(transport);
    try {
      await printed;
      const mirror = printedMirror(stderr);
      const seen = await readFeed(mirror, await login(mirror), (f) => f.type === 'runtime.started');
      expect(seen[0]).toMatchObject({ type: 'runtime.started', v: 1 });
      const r = await client.callTool({ name: 'bash', arguments: { command: 'echo still serving' } });
      expect((r.content as { text: string }[])[0]?.text).toMatch(/^still serving\n/);
    } finally {
      await client.close();
    }
  });
});
