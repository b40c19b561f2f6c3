import { afterEach, describe, expect, it } from 'vitest';
import { createRuntime, type Runtime } from '../../src/runtime.js';
import { collected } from '../support/collected.js';

let rt: Runtime | null = null;
afterEach(async () => {
  await rt?.dispose();
  rt = null;
});

describe('lease retention', () => {
  it('O2, D3: leases an agent keeps after rt.dispose() hold nothing of the disposed runtime (it is collected), and retire() on them is a no-op', async () => {
    rt = await createRuntime({ spillDir: false });
    const leases = Array.from({ length: 3 }, () => rt!.owners.host());
    const job = await rt.shell.background(leases[0]!.token, { command: 'echo tick' });
    expect(await rt.jobs.wait(leases[0]!.token, job.id, 10_000)).toBe(true);
    const terminal = await rt.terminals.open(leases[1]!.token);
    expect(terminal.id).toBeTruthy();
    await rt.dispose();
    const disposed = new WeakRef(rt);
    const services = new WeakRef(rt.terminals);
    rt = null;
    expect(await collected(disposed)).toBe(true);
    expect(await collected(services)).toBe(true);
    // Kept, they still answer, and retiring one after dispose reclaims nothing and throws nothing.
    leases[2]!.retire();
    expect(leases.map((l) => l.retired)).toEqual([false, false, true]);
  }, 60_000);
});
