import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readmeBlocks } from './readme-blocks.js';

// The MCP configuration the README prints, started as a client would start it: the JSON block
// parsed from README.md, nothing substituted but the tarball path the README tells the reader
// to make with `npm pack`, the SDK's stdio client with its default environment, in a directory
// that is not this repository (so npx cannot find our own node_modules/.bin).
const root = fileURLToPath(new URL('../..', import.meta.url));
const PLACEHOLDER = '/absolute/path/to/tether-runtime-0.1.0.tgz';
const version = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).version as string;
const config = readmeBlocks(readFileSync(join(root, 'README.md'), 'utf8')).find(
  (b) => b.lang === 'json' && b.code.includes('"mcpServers"'),
);

let work: string;
let tarball: string;
beforeAll(async () => {
  if (!existsSync(join(root, 'dist', 'src', 'index.js'))) {
    throw new Error('dist/ is missing: run `npm run build` first (npm test does)');
  }
  // A fresh path each run: npx caches an install per spec, and a reused path would run an old one.
  work = mkdtempSync(join(tmpdir(), 'tether-mcp-config-'));
  const packed = await execa('npm', ['pack', '--json', '--pack-destination', work], { cwd: root });
  const [pack] = JSON.parse(packed.stdout) as [{ filename: string }];
  tarball = join(work, pack.filename);
}, 120_000);

afterAll(async () => {
  if (!work) return;
  // The npx install made for this tarball (only that one) goes with it.
  const cache = (await execa('npm', ['config', 'get', 'cache'], { reject: false })).stdout.trim();
  const npx = join(cache, '_npx');
  for (const dir of existsSync(npx) ? readdirSync(npx) : []) {
    const manifest = join(npx, dir, 'package.json');
    if (existsSync(manifest) && readFileSync(manifest, 'utf8').includes(work)) {
      rmSync(join(npx, dir), { recursive: true, force: true });
    }
  }
  rmSync(work, { recursive: true, force: true });
});

describe('the README’s MCP configuration', () => {
  it('R: names the tarball `npm pack` makes, once, and nothing else to fill in', () => {
    expect(config, 'a ```json block with "mcpServers" in README.md').toBeDefined();
    expect(tarball.endsWith(`/tether-runtime-${version}.tgz`)).toBe(true);
    expect(PLACEHOLDER.endsWith(`/tether-runtime-${version}.tgz`), 'the README names this version').toBe(
      true,
    );
    expect(config!.code.split(PLACEHOLDER).length - 1).toBe(1);
    // The install route that works today: a published name would answer 404.
    expect(config!.code).not.toMatch(/"tether-runtime"/);
  });

  it('M, R: starts as printed (npx from the tarball) and an MCP SDK client lists and calls its tools', async () => {
    const servers = JSON.parse(config!.code.replace(PLACEHOLDER, tarball)).mcpServers as Record<
      string,
      { command: string; args: string[] }
    >;
    const { command, args } = servers.tether!;
    // What a client does with it: no env of ours (the SDK's default: HOME, PATH, SHELL, …).
    const transport = new StdioClientTransport({ command, args, cwd: work, stderr: 'pipe' });
    let stderr = '';
    transport.stderr?.on('data', (chunk: Buffer) => {
      stderr += chunk.toString('utf8');
    });
    const stderrEnded = new Promise<void>((resolve) => {
      transport.stderr?.once('close', resolve);
      transport.stderr?.once('end', resolve);
    });
    const client = new Client({ name: 'readme-mcp-config', version: '1.0.0' });
    try {
      // The first start installs the tarball's dependencies (npx): tens of seconds.
      await client.connect(transport, { timeout: 240_000 });
      const { tools } = await client.listTools();
      const names = tools.map((t) => t.name);
      expect(names, stderr).toEqual(
        expect.arrayContaining(['bash', 'job_list', 'terminal_open', 'terminal_send']),
      );
      const r = await client.callTool({ name: 'bash', arguments: { command: 'echo from-the-readme' } });
      const text = (r.content as { type: string; text: string }[]).map((c) => c.text).join('');
      expect(text, stderr).toContain('from-the-readme');
    } finally {
      await client.close();
    }
    await stderrEnded;
    // The client went away: the server drained what it started and said so (M).
    expect(stderr).toContain('nothing it started is still running');
  }, 300_000);
});
