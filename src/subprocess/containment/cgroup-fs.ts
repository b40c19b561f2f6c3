import { accessSync, constants, readdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** Where this process sits in a writable cgroup v2 hierarchy, or why there is none (K1). */
export type CgroupProbe =
  | { readonly ok: true; readonly mount: string; readonly self: string }
  | { readonly ok: false; readonly reason: string };

/**
 * Finds the cgroup v2 directory this process belongs to (K1): the `cgroup2` mount from
 * `/proc/self/mountinfo` (hybrid hosts mount it at e.g. `/sys/fs/cgroup/unified`) joined
 * with the `0::<path>` line of `/proc/self/cgroup`. Never a hard-coded path. Says why not
 * (no v2 mount, not in it, not writable, no `cgroup.kill` before Linux 5.14) when it cannot.
 *
 * @example
 * ```ts
 * const probe = probeCgroup();
 * if (probe.ok) console.log('cgroup of this process:', probe.self);
 * ```
 */
export function probeCgroup(): CgroupProbe {
  const found = ownCgroupDir(null);
  if (!found.ok) return found;
  const { mount: mountpoint, self } = found;
  try {
    accessSync(join(self, 'cgroup.procs'), constants.W_OK);
    accessSync(self, constants.W_OK);
  } catch {
    return {
      ok: false,
      reason: `the cgroup ${self} is not writable by uid ${process.getuid?.()} (run as root, or in a delegated cgroup: systemd-run --user --scope -p Delegate=yes)`,
    };
  }
  return { ok: true, mount: mountpoint, self };
}

/**
 * This process's directory in a mounted cgroup hierarchy: the v2 one (`controller` null) or the
 * v1 one that carries `controller` (hybrid hosts: `cpu` at e.g. `/sys/fs/cgroup/cpu`), from
 * `/proc/self/mountinfo` joined with this process's line of `/proc/self/cgroup`.
 *
 * @example
 * ```ts
 * ownCgroupDir('cpu'); // { ok: true, mount: '/sys/fs/cgroup/cpu', self: '/sys/fs/cgroup/cpu' }
 * ```
 */
export function ownCgroupDir(controller: string | null): CgroupProbe {
  const mountinfo = readText('/proc/self/mountinfo');
  const own = readText('/proc/self/cgroup');
  if (mountinfo === null || own === null) return { ok: false, reason: 'there is no /proc (not Linux)' };
  // mountinfo: id parent major:minor root mountpoint options - fstype source superoptions
  const carries = (f: string[]) => {
    const at = f.indexOf('-');
    return controller === null
      ? f[at + 1] === 'cgroup2'
      : f[at + 1] === 'cgroup' && (f[at + 3] ?? '').split(',').includes(controller);
  };
  const mount = mountinfo
    .split('\n')
    .map((line) => line.split(' '))
    .find(carries);
  const hierarchy = controller === null ? 'cgroup v2' : `cgroup v1 ${controller}`;
  if (mount === undefined) return { ok: false, reason: `no ${hierarchy} hierarchy is mounted` };
  const [root, mountpoint] = [unescapeOctal(mount[3] ?? '/'), unescapeOctal(mount[4] ?? '')];
  // /proc/self/cgroup: hierarchy-id:controllers:path (v2: `0::path`).
  const line = own
    .split('\n')
    .map((l) => /^(\d+):([^:]*):(.*)$/.exec(l))
    .find(
      (m) =>
        m !== null &&
        (controller === null ? m[1] === '0' && m[2] === '' : m[2]!.split(',').includes(controller)),
    );
  if (line === undefined || line === null)
    return { ok: false, reason: `this process is in no ${hierarchy} group` };
  let path = line[3]!;
  if (root !== '/' && path.startsWith(root)) path = path.slice(root.length);
  return { ok: true, mount: mountpoint, self: join(mountpoint, path) };
}

// mountinfo escapes space, tab, newline and backslash as octal.
function unescapeOctal(field: string): string {
  return field.replace(/\\([0-7]{3})/g, (_, oct: string) => String.fromCharCode(Number.parseInt(oct, 8)));
}

function readText(path: string): string | null {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return null;
  }
}

/**
 * Whether any live process is in `dir` or below (`cgroup.events`: `populated 1`). Zombies do
 * not count (measured: an unreaped child leaves `populated 0`). A removed cgroup is empty.
 *
 * @example
 * ```ts
 * if (!isPopulated(tree)) rmdirSync(tree);
 * ```
 */
export function isPopulated(dir: string): boolean {
  const events = readText(join(dir, 'cgroup.events'));
  return events !== null && /^populated 1$/m.test(events);
}

/**
 * The pids in `dir` and every cgroup below it (a tree may make sub-cgroups of its own).
 *
 * @example
 * ```ts
 * const left = cgroupPids(tree); // [] once the tree is dead
 * ```
 */
export function cgroupPids(dir: string): number[] {
  const pids: number[] = [];
  const text = readText(join(dir, 'cgroup.procs'));
  if (text === null) return pids;
  for (const line of text.split('\n')) if (line !== '') pids.push(Number(line));
  for (const sub of subgroups(dir)) pids.push(...cgroupPids(sub));
  return pids;
}

/**
 * Writes `1` to `cgroup.kill`: the kernel SIGKILLs every process of `dir` and below, forks in
 * flight included (Linux 5.14+). `false` when the cgroup is gone.
 *
 * @example
 * ```ts
 * killCgroup(tree);
 * await waitUnpopulated(tree, 2000);
 * ```
 */
export function killCgroup(dir: string): boolean {
  try {
    writeFileSync(join(dir, 'cgroup.kill'), '1');
    return true;
  } catch {
    return false;
  }
}

/**
 * Removes `dir` and the cgroups below it, deepest first. Only empty cgroups can go: `false`
 * while a process is left (the caller kills first). A missing `dir` counts as removed.
 *
 * @example
 * ```ts
 * if (!removeCgroup(tree)) console.warn('still populated:', cgroupPids(tree));
 * ```
 */
export function removeCgroup(dir: string): boolean {
  // A tree's cgroup rarely has children: list them only when the kernel refused for that
  // (EBUSY), not before every rmdir (a readdir of ~30 interface files; P8 disposes 1,000).
  const first = rmdirOrGone(dir);
  if (first !== 'EBUSY') return first === true;
  for (const sub of subgroups(dir)) removeCgroup(sub);
  return rmdirOrGone(dir) === true;
}

// true: removed or already gone; otherwise the error code (EBUSY: populated or has children).
function rmdirOrGone(dir: string): true | string {
  try {
    rmdirSync(dir);
    return true;
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? 'unknown';
    return code === 'ENOENT' ? true : code;
  }
}

/**
 * The child cgroups of `dir` (directories; the interface files are plain files).
 *
 * @example
 * ```ts
 * for (const tree of subgroups(runtimeGroup)) killCgroup(tree);
 * ```
 */
export function subgroups(dir: string): string[] {
  try {
    return readdirSync(dir, { withFileTypes: true })
      .filter((e) => e.isDirectory())
      .map((e) => join(dir, e.name));
  } catch {
    return [];
  }
}

/**
 * The cgroup v2 path of `pid` relative to the hierarchy root (`/tether-…/t3`), or `null` when
 * it is gone.
 *
 * @example
 * ```ts
 * cgroupOf(process.pid); // '/'
 * ```
 */
export function cgroupOf(pid: number): string | null {
  const text = readText(`/proc/${pid}/cgroup`);
  const line = text?.split('\n').find((l) => l.startsWith('0::'));
  return line === undefined ? null : line.slice(3);
}
