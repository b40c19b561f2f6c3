import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type Agent, createRuntime, type Runtime } from '../../src/index.js';

const entry = fileURLToPath(new URL('../../dist/src/index.js', import.meta.url));
const SHOW = 'env | grep ^TETHER_ | grep -v ^TETHER_TREE= | sort';

let rt: Runtime;
let a: Agent;
let b: Agent;

// Values a parent agent or the test host would leak if the sanitizer did not drop them (S3).
const leaked = { TETHER_SESSION_ID: 'leaked', TETHER_AGENT_ID: 'leaked', TETHER_JOB_ID: 'leaked' };
beforeAll(() => Object.assign(process.env, leaked));
afterAll(() => {
  for (const name of Object.keys(leaked)) delete process.env[name];
});

beforeEach(async () => {
  rt = await createRuntime({ spillDir: false, limits: { cleanupGraceMs: 200 } });
  a = rt.agents.create({ sessionId: 'sess-a', onTurn: async () => {} });
  b = rt.agents.create({ sessionId: 'sess-b', onTurn: async () => {} });
});
afterEach(async () => {
  await rt.dispose();
});

const lines = (text: string) => text.split('\n').filter((l) => l.startsWith('TETHER_'));
const identity = (agent: Agent, jobId?: string) => [
  `TETHER_AGENT_ID=${agent.id}`,
  ...(jobId ? [`TETHER_JOB_ID=${jobId}`] : []),
  `TETHER_SESSION_ID=${agent.sessionId}`,
];

async function backgroundEnv(agent: Agent): Promise<{ id: string; env: string[] }> {
  const job = await rt.shell.background(agent.owner, { command: SHOW });
  expect(await rt.jobs.wait(agent.owner, job.id, 30_000)).toBe(true);
  return { id: job.id, env: lines((await rt.jobs.read(agent.owner, job.id, 0)).text) };
}

describe('S3: the identity snapshot in a command env', () => {
  it('S3: foreground bash (the tool) sees its own agent ids, never another agent or the host', async () => {
    const [ra, rb] = await Promise.all([
      a.tools.call('bash', { command: SHOW }),
      b.tools.call('bash', { command: SHOW }),
    ]);
    expect(lines(ra.text)).toEqual(identity(a));
    expect(lines(rb.text)).toEqual(identity(b));
    // Without an owner (a host's own call) the inherited values are gone and none are added.
    expect(lines((await rt.shell.run({ command: SHOW })).output)).toEqual([]);
    expect(a.id).not.toBe(b.id);
  });

  it('S3, J1: a background job has its own job id in the env at spawn, with its agent ids', async () => {
    const [ja, jb] = await Promise.all([backgroundEnv(a), backgroundEnv(b)]);
    expect(ja.env).toEqual(identity(a, ja.id));
    expect(jb.env).toEqual(identity(b, jb.id));
    const host = rt.owners.host();
    const jh = await rt.shell.background(host.token, { command: SHOW });
    await rt.jobs.wait(host.token, jh.id, 30_000);
    expect(lines((await rt.jobs.read(host.token, jh.id, 0)).text)).toEqual([`TETHER_JOB_ID=${jh.id}`]);
    // The caller's overlay cannot forge an identity: it is applied last.
    const forged = await rt.shell.background(a.owner, {
      command: SHOW,
      env: { TETHER_SESSION_ID: 'forged', TETHER_JOB_ID: 'forged' },
    });
    await rt.jobs.wait(a.owner, forged.id, 30_000);
    expect(lines((await rt.jobs.read(a.owner, forged.id, 0)).text)).toEqual(identity(a, forged.id));
  });

  it('S3: terminals and the persistent bash of each agent carry that agent ids', async () => {
    const ta = await rt.terminals.open(a.owner);
    const tb = await rt.terminals.open(b.owner);
    expect(lines((await rt.terminals.execute(a.owner, ta.id, SHOW)).output)).toEqual(identity(a));
    expect(lines((await rt.terminals.execute(b.owner, tb.id, SHOW)).output)).toEqual(identity(b));
    expect(lines((await rt.persistentBash.run(a.owner, SHOW)).output)).toEqual(identity(a));
    expect(lines((await rt.persistentBash.run(b.owner, SHOW)).output)).toEqual(identity(b));
    // A nested bash inherits its shell's env: still its own agent's values.
    expect(lines((await rt.persistentBash.run(b.owner, `bash -c '${SHOW}'`)).output)).toEqual(identity(b));
  });

  it("S3: a command that starts a runtime in a child node gives the inner agent's commands the inner ids", async () => {
    const inner = `
      const { createRuntime } = await import(${JSON.stringify(entry)});
      const rt = await createRuntime({ spillDir: false });
      const agent = rt.agents.create({ sessionId: 'inner', onTurn: async () => {} });
      const r = await agent.tools.call('bash', { command: ${JSON.stringify(SHOW)} });
      const t = await rt.terminals.open(agent.owner);
      const term = await rt.terminals.execute(agent.owner, t.id, ${JSON.stringify(SHOW)});
      await rt.dispose();
      process.stdout.write(JSON.stringify({ id: agent.id, bash: r.text, terminal: term.output }));
    `;
    const command = `${SHOW}; echo ---; ${JSON.stringify(process.execPath)} --input-type=module -e ${shellWord(inner)}`;
    const r = await a.tools.call('bash', { command, timeout_ms: 60_000 });
    expect(r.ok, r.text).toBe(true);
    const [outer, nested] = r.text.split('---\n');
    expect(lines(outer!)).toEqual(identity(a));
    const seen = JSON.parse(nested!.slice(0, nested!.lastIndexOf('}') + 1)) as Record<string, string>;
    const innerIds = ['TETHER_AGENT_ID=agent:inner:1', 'TETHER_SESSION_ID=inner'];
    expect(seen.id).toBe('agent:inner:1');
    expect(lines(seen.bash!)).toEqual(innerIds);
    expect(lines(seen.terminal!)).toEqual(innerIds);
  });
});

function shellWord(text: string): string {
  return `'${text.replaceAll("'", "'\\''")}'`;
}
