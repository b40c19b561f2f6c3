import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { InspectionEvent } from 'xstate';
import { createRuntime, type JobInfo, type OwnerLease, type Runtime } from '../../src/index.js';
import { treeIdPrefix } from '../../src/subprocess/marker.js';
import { listTaggedProcesses } from '../../src/subprocess/proc.js';
import { alive, announced, type SeenProcess, sessionOf } from '../support/proc-oracle.js';
import { waitFor } from '../support/spawn-tree.js';

// J7, J8 and the guarantee matrix (G) against the real `rt.shell.background` producer — not a
// test double — with /proc as the oracle: each script announces its pids, and the test checks
// them itself (pid + start time), independently of the runtime's own tree bookkeeping.

let rt: Runtime;
let lease: OwnerLease;
/** Each job actor's states in order (from the inspection stream), by job id. */
const states = new Map<string, string[]>();
const inspect = (e: InspectionEvent) => {
  if (e.type !== '@xstate.snapshot') return;
  const s = e.snapshot as { value?: unknown; context?: { jobId?: string } };
  const id = s.context?.jobId;
  if (id === undefined) return;
  const list = states.get(id) ?? [];
  const value = JSON.stringify(s.value);
  if (list.at(-1) !== value) list.push(value);
  states.set(id, list);
};

beforeEach(async () => {
  states.clear();
  rt = await createRuntime({ spillDir: false, inspect, limits: { cleanupGraceMs: 300, drainMs: 200 } });
  lease = rt.owners.host();
});
afterEach(async () => {
  await rt.dispose();
});

// Reads a running job's output until it contains `marker` (the script's own "ready" line).
async function readUntil(owner: OwnerLease, jobId: string, marker: string): Promise<string> {
  let text = '';
  let cursor = 0;
  for (let i = 0; !text.includes(marker); i++) {
    if (i > 3_000) throw new Error(`no '${marker}' in ${JSON.stringify(text)}`);
    const page = await rt.jobs.read(owner.token, jobId, cursor);
    text += page.text;
    cursor = page.cursor;
    if (page.done && !text.includes(marker)) throw new Error(`ended before '${marker}': ${text}`);
    if (page.text === '') await sleep(10);
  }
  return text;
}

// Records, at the moment each job is reported ended, which of its announced processes were alive.
function aliveAtCompletion(owner: OwnerLease, trees: Map<string, SeenProcess[]>) {
  const seen = new Map<string, { info: JobInfo; alive: number[] }>();
  const sub = rt.jobs.onCompletion(owner.token, (info) => {
    seen.set(info.id, { info, alive: alive(trees.get(info.id) ?? []) });
  });
  return { seen, dispose: () => sub.dispose() };
}

// A script that traps INT (J7's interrupt), keeps a background child, and one that escaped with setsid.
const INT_TRAP_TREE =
  "trap 'echo interrupted; exit 130' INT; sleep 300 & echo child=$!; setsid sleep 300 & echo escaped=$!; echo started; wait";
// A tree that ignores TERM and INT: only SIGKILL after the grace ends it.
const STUBBORN_TREE =
  "trap '' INT TERM; (trap '' INT TERM; exec sleep 300) & echo child=$!; echo shell=$$; echo started; while :; do sleep 0.05; done";

describe('rt.shell.background: kill and drain against the real producer', () => {
  it('J7, G: kill interrupts first (the INT trap runs), then the whole tree — escapee too — is gone before killed is reported', async () => {
    const info = await rt.shell.background(lease.token, { command: INT_TRAP_TREE });
    const out = await readUntil(lease, info.id, 'started\n');
    const tree = announced(out, ['child', 'escaped']);
    // `$!` is announced before setsid(2) ran in that child: wait until it has its own session.
    await waitFor(
      () => sessionOf(tree[1]!.pid) !== sessionOf(tree[0]!.pid) || null,
      'the setsid escapee',
      5_000,
    );
    const completion = aliveAtCompletion(lease, new Map([[info.id, tree]]));
    expect(await rt.jobs.kill(lease.token, info.id)).toBe('requested');
    expect(await rt.jobs.wait(lease.token, info.id, 60_000)).toBe(true);
    expect(completion.seen.get(info.id)).toEqual({
      info: expect.objectContaining({ state: 'killed' }),
      alive: [],
    });
    completion.dispose();
    const rest = await rt.jobs.read(lease.token, info.id, out.length);
    expect(out + rest.text).toContain('interrupted'); // SIGINT reached the foreground group first
    expect(listTaggedProcesses(treeIdPrefix())).toEqual([]);
  });

  it('J7, G: a tree that ignores INT and TERM is killed; cancelRequested is visible before killed', async () => {
    const info = await rt.shell.background(lease.token, { command: STUBBORN_TREE });
    const tree = announced(await readUntil(lease, info.id, 'started\n'), ['child', 'shell']);
    const completion = aliveAtCompletion(lease, new Map([[info.id, tree]]));
    expect(await rt.jobs.kill(lease.token, info.id)).toBe('requested');
    expect((await rt.jobs.list(lease.token))[0]).toMatchObject({ cancelRequested: true });
    expect(await rt.jobs.wait(lease.token, info.id, 60_000)).toBe(true);
    expect(completion.seen.get(info.id)).toEqual({
      info: expect.objectContaining({ state: 'killed', cancelRequested: true }),
      alive: [],
    });
    completion.dispose();
    // G: "asked to stop" and "stopped" are two facts, in that order (J2).
    expect(states.get(info.id)).toEqual([
      '{"running":"active"}',
      '{"running":"cancelRequested"}',
      '"killed"',
    ]);
  });

  it('J8: drainOwner cancels the real shell jobs of one owner and resolves only when every tree is gone', async () => {
    const other = rt.owners.host();
    const jobs = [
      await rt.shell.background(lease.token, { command: INT_TRAP_TREE }),
      await rt.shell.background(lease.token, { command: STUBBORN_TREE }),
    ];
    const trees = [
      announced(await readUntil(lease, jobs[0]!.id, 'started\n'), ['child', 'escaped']),
      announced(await readUntil(lease, jobs[1]!.id, 'started\n'), ['child', 'shell']),
    ];
    const theirs = await rt.shell.background(other.token, { command: 'echo child=$$; exec sleep 300' });
    const kept = announced(await readUntil(other, theirs.id, 'child='), ['child']);

    await rt.jobs.drainOwner(lease.token);

    // No polling: when drainOwner resolves, the trees are already gone.
    expect(trees.map(alive)).toEqual([[], []]);
    expect((await rt.jobs.list(lease.token)).map((j) => j.state)).toEqual(['killed', 'killed']);
    // J8 retires nothing and touches no other owner.
    expect(alive(kept)).toEqual([kept[0]!.pid]);
    expect((await rt.jobs.list(other.token))[0]).toMatchObject({ id: theirs.id, state: 'running' });
    const again = await rt.shell.background(lease.token, { command: 'exit 0' });
    expect(await rt.jobs.wait(lease.token, again.id, 60_000)).toBe(true);
    await rt.jobs.drainOwner(other.token);
    expect(alive(kept)).toEqual([]);
  });

  it('C3, S4: a background timeout kills the tree (child and setsid escapee) and says so', async () => {
    // The deadline only has to outlast the announcements; the kill is what is checked.
    const info = await rt.shell.background(lease.token, {
      command: 'sleep 300 & echo child=$!; setsid sleep 300 & echo escaped=$!; echo started; sleep 300',
      timeoutMs: 5_000,
    });
    const tree = announced(await readUntil(lease, info.id, 'started\n'), ['child', 'escaped']);
    const completion = aliveAtCompletion(lease, new Map([[info.id, tree]]));
    expect(await rt.jobs.wait(lease.token, info.id, 60_000)).toBe(true);
    const ended = completion.seen.get(info.id);
    expect(ended?.alive).toEqual([]);
    expect(ended?.info.state).toBe('failed');
    expect(ended?.info.error).toContain('timed out after 5000 ms');
    completion.dispose();
  });
});
