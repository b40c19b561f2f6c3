import { readFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { createRuntime, type Runtime, type RuntimeOptions } from '../../src/index.js';
import { spawnerBinary } from '../../src/subprocess/spawner/spawner.js';

// S1 / issue 30.6: every local tree runs `nice` levels below the runtime, in a session autogroup
// of that nice, so a CPU flood of its own trees cannot starve the loop that carries their output.
// Read back from /proc by the tree itself: its process nice (stat field 19) and its autogroup.

const runtimes: Runtime[] = [];
afterEach(async () => {
  for (const rt of runtimes.splice(0)) await rt.dispose();
});

const open = async (options: RuntimeOptions = {}) => {
  const rt = await createRuntime({ spillDir: false, limits: { cleanupGraceMs: 300 }, ...options });
  runtimes.push(rt);
  return rt;
};

// Field 19 of /proc/<pid>/stat, counted after the command name's closing parenthesis.
const niceOf = (stat: string) => Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16]);
const ownNice = niceOf(readFileSync('/proc/self/stat', 'utf8'));
const PROBE = 'cat /proc/self/stat; echo; cat /proc/self/autogroup';

// What the probe printed: the nice of its `cat` and its autogroup's nice.
const parse = (output: string) => {
  const [stat, autogroup] = output.split('\n').filter(Boolean);
  return { nice: niceOf(stat!), autogroup: Number(/nice (-?\d+)/.exec(autogroup!)?.[1]) };
};

describe.runIf(spawnerBinary() !== null)('trees run below the runtime (S1, issue 30.6)', () => {
  it('S1: by default a shell.run tree runs 10 nice levels below the runtime, its autogroup at nice 10', async () => {
    const rt = await open();
    const r = await rt.shell.run({ command: PROBE, timeoutMs: 10_000 });
    expect(r.exitCode).toBe(0);
    expect(parse(r.output)).toEqual({ nice: Math.min(19, ownNice + 10), autogroup: 10 });
  });

  it('S1: nice 0 keeps the runtime’s priority; nice 19 reaches a background job and its children', async () => {
    const same = await open({ nice: 0 });
    const r = await same.shell.run({ command: PROBE, timeoutMs: 10_000 });
    expect(parse(r.output)).toEqual({ nice: ownNice, autogroup: 0 });

    const low = await open({ nice: 19 });
    const lease = low.owners.host();
    const { id } = await low.shell.background(lease.token, { command: `bash -c '${PROBE}'` });
    expect(await low.jobs.wait(lease.token, id, 10_000)).toBe(true);
    const page = await low.jobs.read(lease.token, id, 0);
    expect(parse(page.text)).toEqual({ nice: 19, autogroup: 19 });
  });

  it('S1: a sandboxed tree is niced as well (the spawner sets it before it enters the enclave)', async () => {
    const rt = await open({ nice: 7, sandbox: { mode: 'workspace-write' }, cwd: process.cwd() });
    const r = await rt.shell.run({ command: PROBE, timeoutMs: 20_000 });
    expect(r.exitCode).toBe(0);
    expect(parse(r.output)).toEqual({ nice: Math.min(19, ownNice + 7), autogroup: 7 });
  });

  it('S1: a nice outside 0–19 or not an integer is INVALID_ARGUMENT saying the range', async () => {
    for (const nice of [-1, 20, 1.5, '5', null]) {
      await expect(createRuntime({ nice } as unknown as RuntimeOptions)).rejects.toMatchObject({
        code: 'INVALID_ARGUMENT',
        message: expect.stringContaining('nice must be an integer from 0 to 19'),
      });
    }
  });
});
