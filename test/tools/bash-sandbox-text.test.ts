import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type Agent, createRuntime, type Runtime } from '../../src/index.js';
import { sandboxRefusals } from '../../src/tools/sandbox-text.js';

let base: string;
let rt: Runtime;
let agent: Agent;
let secret: string;

beforeEach(async () => {
  base = mkdtempSync(join(tmpdir(), 'tether-sbx-text-'));
  const ws = join(base, 'ws');
  mkdirSync(ws);
  secret = join(base, 'secret.txt');
  writeFileSync(secret, 'x');
  rt = await createRuntime({ cwd: ws, spillDir: false, limits: { cleanupGraceMs: 300 } });
  agent = rt.agents.create({
    sessionId: 'text',
    onTurn: () => {},
    sandbox: { mode: 'workspace-write', denyRead: [secret] },
  });
});

afterEach(async () => {
  await agent.dispose();
  await rt.dispose();
  rmSync(base, { recursive: true, force: true });
});

const bash = async (command: string) => {
  const r = await agent.tools.call('bash', { command });
  expect(r.ok, r.text).toBe(true);
  return r.text;
};

describe('bash tool: sandbox refusals (A4)', () => {
  it('A4: a write outside the writable roots says it ran sandboxed, what was refused, and how to escalate', async () => {
    const text = await bash('touch /etc/tether-x');
    expect(text).toContain('[sandbox: this command ran in a workspace-write sandbox');
    expect(text).toContain("Refused by the sandbox: writing '/etc/tether-x'");
    expect(text).toMatch(/escalate: true and a justification/);
  });

  it('A4: a denied read and a refused connection are named as such', async () => {
    expect(await bash(`cat ${secret}`)).toContain(`reading '${secret}' (a denied path)`);
    expect(await bash('exec 3<>/dev/tcp/127.0.0.1/9')).toContain(
      'network access (the sandbox has no network)',
    );
  });

  it('A4: an ordinary failure gets no sandbox note', async () => {
    const text = await bash('ls /definitely-not-here; exit 3');
    expect(text).toContain('[exit code');
    expect(text).not.toContain('[sandbox:');
    expect(await bash('echo fine')).not.toContain('[sandbox:');
  });

  it('A4: EACCES on a path that is not denied, and any output of a successful command, are not refusals', () => {
    const sandbox = {
      mode: 'workspace-write',
      mechanism: 'bubblewrap',
      network: 'host',
      isolation: 'pid',
      writableRoots: ['/w'],
      denyRead: ['/root/.ssh'],
      uid: 65533,
    } as const;
    expect(sandboxRefusals('cat: /w/locked: Permission denied\n', 1, sandbox)).toEqual([]);
    expect(sandboxRefusals('curl: (6) Could not resolve host: x\n', 6, sandbox)).toEqual([]); // network: host
    expect(sandboxRefusals("touch: cannot touch '/etc/x': Read-only file system\n", 0, sandbox)).toEqual([]);
    expect(sandboxRefusals('cat: /root/.ssh/id: Permission denied\n', 1, sandbox)).toEqual([
      { kind: 'read', path: '/root/.ssh/id' },
    ]);
  });
});
