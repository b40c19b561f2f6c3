import { mkdirSync, readdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * The test run's own leak oracle (issue 11): this test process moves itself into a cgroup v2
 * of its own, so every process it starts — through the runtime or not, with or without the env
 * marker, setsid or not — is in that cgroup or below until it dies. Deliberately written apart
 * from `src/subprocess/containment/` (its own parsing, no shared code), so that it does not share the
 * implementation's blind spots. `null` where there is no writable cgroup v2 (not root).
 */
export interface LeakCgroup {
  readonly dir: string;
  /** Pids in the cgroup and below, other than this process. */
  leaked(): number[];
}

export function enterLeakCgroup(): LeakCgroup | null {
  const base = ownCgroupDir();
  if (base === null) return null;
  const name = `vitest-${process.pid}`;
  // Already inside (a reused fork): the same cgroup goes on serving.
  const dir = base.endsWith(`/${name}`) ? base : join(base, name);
  try {
    if (dir !== base) {
      removeStaleSiblings(base);
      mkdirSync(dir, { recursive: true });
      writeFileSync(join(dir, 'cgroup.procs'), String(process.pid));
    }
  } catch {
    return null; // not writable (not root, no delegation): only the marker check runs
  }
  process.once('exit', () => {
    // Step out and remove the empty cgroup (the runtime's own are gone by now, or empty).
    try {
      writeFileSync(join(dir, '..', 'cgroup.procs'), String(process.pid));
      removeTree(dir);
    } catch {}
  });
  return { dir, leaked: () => pidsBelow(dir).filter((pid) => pid !== process.pid) };
}

/** The cgroup v2 directory this process is in, or null where there is none to be found. */
export function ownCgroupDir(): string | null {
  try {
    const line = readFileSync('/proc/self/cgroup', 'utf8')
      .split('\n')
      .find((l) => l.startsWith('0::'));
    const mount = readFileSync('/proc/self/mountinfo', 'utf8')
      .split('\n')
      .map((l) => l.split(' '))
      .find((f) => f.includes('cgroup2') && f[f.indexOf('-') + 1] === 'cgroup2');
    if (line === undefined || mount === undefined || mount[3] !== '/') return null;
    return join(mount[4] ?? '', line.slice(3));
  } catch {
    return null;
  }
}

function pidsBelow(dir: string): number[] {
  const pids = readFileSync(join(dir, 'cgroup.procs'), 'utf8')
    .split('\n')
    .filter((l) => l !== '')
    .map(Number);
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (entry.isDirectory()) pids.push(...pidsBelow(join(dir, entry.name)));
  }
  return pids;
}

// A fork that died without its exit handler leaves an empty vitest-<pid> behind.
function removeStaleSiblings(base: string): void {
  for (const entry of readdirSync(base, { withFileTypes: true })) {
    const pid = /^vitest-(\d+)$/.exec(entry.name)?.[1];
    if (!entry.isDirectory() || pid === undefined) continue;
    try {
      process.kill(Number(pid), 0);
      continue; // alive
    } catch {}
    const dir = join(base, entry.name);
    if (pidsBelow(dir).length === 0) removeTree(dir);
  }
}

function removeTree(dir: string): void {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (entry.isDirectory()) removeTree(join(dir, entry.name));
  }
  try {
    rmdirSync(dir);
  } catch {}
}
