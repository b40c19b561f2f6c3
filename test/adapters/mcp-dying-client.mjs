// An MCP client that a test SIGKILLs: it starts `tether mcp` (argv[2] is the built CLI) with the
// server's stderr piped to it, leaves a background `sleep 300` and a terminal running `cat`,
// prints the server's pid and waits to be killed.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

const transport = new StdioClientTransport({
  command: process.execPath,
  args: [process.argv[2], 'mcp'],
  stderr: 'pipe',
});
const client = new Client({ name: 'tether-dying-client', version: '1.0.0' });
await client.connect(transport);
const call = (name, args) => client.callTool({ name, arguments: args });
await call('bash', { command: 'sleep 300', run_in_background: true });
const opened = await call('terminal_open', {});
const terminal = opened.structuredContent.terminal.id;
await call('terminal_send', { terminal_id: terminal, input: 'cat\n', settle_ms: 200 });
process.stdout.write(`server=${transport.pid}\n`);
setInterval(() => {}, 1 << 30);
