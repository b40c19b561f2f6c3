import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { describe, expect, it } from 'vitest';
import { cli, tether } from './cli-helpers.js';

// Connects the MCP SDK's own client to `tether mcp ...args`, as Claude Desktop or Cursor would.
async function connectWith(args: readonly string[]) {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [cli, 'mcp', ...args],
    stderr: 'pipe',
  });
  let stderr = '';
  transport.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString('utf8');
  });
  const client = new Client({ name: 'tether-flags-test', version: '1.0.0' });
  const connected = await client.connect(transport).then(
    () => null,
    (err: unknown) => err,
  );
  return { client, transport, connected, stderr: () => stderr };
}

describe('tether mcp flags', () => {
  it('M: --help states the --output-budget minimum', () => {
    const r = tether('mcp', '--help');
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(
      /--output-budget <chars>\s+at most this many characters per tool result: an integer of\s+at\s+least 2000/,
    );
  });

  it('M (issue 33.1, 33.3): --help gives a configuration that works today and says a dead client is drained too', () => {
    const r = tether('mcp', '--help');
    expect(r.stdout).not.toContain('"args": ["-y", "tether-runtime", "mcp"]'); // npm answers 404
    expect(r.stdout).toContain('--package=/absolute/path/to/tether-runtime-<version>.tgz');
    expect(r.stdout).toContain('a log line that cannot be written is dropped, it never ends the server');
  });

  it.each([
    [['--output-budget', '100'], "--output-budget takes an integer of at least 2000 characters, got '100'"],
    [['--output-budget', 'lots'], "--output-budget takes an integer of at least 2000 characters, got 'lots'"],
    [['--persistent'], "unknown option '--persistent'"],
  ])(
    'M: an MCP client of `tether mcp %j` gets a readable error, not "Connection closed"',
    async (args, reason) => {
      const s = await connectWith(args);
      try {
        expect(s.connected).toBeInstanceOf(Error);
        const message = (s.connected as Error).message;
        expect(message).not.toContain('Connection closed');
        expect(message).toContain(`tether mcp could not start: ${reason}`);
        expect(message).toContain("Fix the server's args in the client's configuration");
      } finally {
        await s.client.close();
      }
      expect(s.stderr()).toContain(`tether mcp: ${reason}`);
    },
  );

  it('M: an --output-budget at the minimum serves', async () => {
    const s = await connectWith(['--output-budget', '2000']);
    try {
      expect(s.connected).toBeNull();
      const r = await s.client.callTool({ name: 'bash', arguments: { command: 'echo ok' } });
      expect((r.content as { text: string }[])[0]?.text).toMatch(/^ok\n/);
    } finally {
      await s.client.close();
    }
  });
});
