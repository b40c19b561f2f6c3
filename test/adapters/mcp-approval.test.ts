import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ElicitRequestSchema, type ElicitResult } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';

// The built CLI, as an MCP client launches it (npm test builds before vitest).
const cli = fileURLToPath(new URL('../../dist/src/cli/main.js', import.meta.url));

// `tether mcp --approve MODE` with the SDK's own client; `answer` (when given) is the user
// answering elicitation requests, and declares the capability.
async function connect(mode: string, answer?: (message: string) => ElicitResult) {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [cli, 'mcp', '--approve', mode],
    stderr: 'pipe',
  });
  const client = new Client(
    { name: 'tether-approval-test', version: '1.0.0' },
    answer ? { capabilities: { elicitation: {} } } : {},
  );
  const asked: string[] = [];
  if (answer) {
    client.setRequestHandler(ElicitRequestSchema, (request) => {
      const message = 'message' in request.params ? request.params.message : '';
      asked.push(message);
      return answer(message);
    });
  }
  await client.connect(transport);
  const bash = async (args: Record<string, unknown>) => {
    const r = await client.callTool({ name: 'bash', arguments: args });
    const text = (r.content as { text: string }[]).map((c) => c.text).join('');
    return {
      text,
      isError: r.isError === true,
      data: (r.structuredContent ?? {}) as Record<string, unknown>,
    };
  };
  return { client, asked, bash };
}

describe('tether mcp --approve (A5, SDK client)', () => {
  it('A5: elicit asks the client’s user; an accepted request runs, plain commands are not asked', async () => {
    const s = await connect('elicit', () => ({ action: 'accept', content: { allow: true } }));
    try {
      const plain = await s.bash({ command: 'echo plain' });
      expect(plain.text).toContain('plain');
      expect(s.asked).toEqual([]); // a command the rules can judge runs without asking
      const r = await s.bash({
        command: 'echo "got $(echo approved)"',
        justification: 'show the substitution',
      });
      expect(r.isError).toBe(false);
      expect(r.text).toContain('got approved');
      expect(s.asked).toHaveLength(1);
      expect(s.asked[0]).toContain('echo "got $(echo approved)"');
      expect(s.asked[0]).toContain('command substitution');
      expect(s.asked[0]).toContain('show the substitution');
    } finally {
      await s.client.close();
    }
  });

  it('A5: a declined elicitation denies with a readable text; an escalation is asked too', async () => {
    const s = await connect('elicit', () => ({ action: 'decline' }));
    try {
      const r = await s.bash({ command: 'echo `whoami`' });
      expect(r.isError).toBe(true);
      expect(r.data).toEqual({ error: { code: 'POLICY_DENIED' } });
      expect(r.text).toContain('the user dismissed the request (decline)');
      expect(r.text).toContain('Nothing was started');
      const escalated = await s.bash({
        command: 'echo out',
        escalate: true,
        justification: 'write ~/.cache',
      });
      expect(escalated.text).toContain('outside the sandbox');
      expect(s.asked[1]).toContain('OUTSIDE the sandbox');
      expect(s.asked[1]).toContain('write ~/.cache');
    } finally {
      await s.client.close();
    }
  });

  it('A5: a client without the elicitation capability gets a denial that says why', async () => {
    const s = await connect('elicit');
    try {
      const r = await s.bash({ command: 'eval "echo hi"' });
      expect(r.isError).toBe(true);
      expect(r.data).toEqual({ error: { code: 'POLICY_DENIED' } });
      expect(r.text).toContain('cannot ask its user');
      expect(r.text).toContain('elicitation');
      expect((await s.bash({ command: 'echo still-works' })).text).toContain('still-works');
    } finally {
      await s.client.close();
    }
  });

  it('A5: --approve allow and deny answer asks themselves; bad values are usage errors', async () => {
    const allow = await connect('allow');
    try {
      expect((await allow.bash({ command: 'echo $(echo yes)' })).text).toContain('yes');
    } finally {
      await allow.client.close();
    }
    const deny = await connect('deny');
    try {
      const r = await deny.bash({ command: 'echo $(echo no)' });
      expect(r.text).toContain('--approve deny');
    } finally {
      await deny.client.close();
    }
    for (const flags of [
      ['--approve', 'maybe'],
      ['--sandbox', 'tight'],
    ]) {
      const bad = spawnSync(process.execPath, [cli, 'mcp', ...flags], { encoding: 'utf8' });
      expect(bad.status, flags.join(' ')).toBe(2);
      expect(bad.stderr).toContain(`${flags[0]} takes one of`);
    }
  });
});
