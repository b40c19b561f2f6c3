import { execFile, execFileSync, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';

/**
 * A container image made from this host's own files (no registry is reachable here): python3
 * and its standard library, bash, coreutils, ps, setsid and the shared libraries they load,
 * imported with `podman import`. Tagged by a hash of the files' paths, sizes and mtimes, so a
 * run (and the next run on the same machine) builds it once; concurrent test files wait on a
 * lock directory instead of building twice.
 */
const PROGRAMS = [
  'bash',
  'sh',
  'cat',
  'sleep',
  'seq',
  'echo',
  'printf',
  'env',
  'true',
  'false',
  'ls',
  'ps',
  'setsid',
  'nohup',
  'kill',
  'stty',
  'head',
  'tail',
  'wc',
  'tr',
  'sort',
  'id',
  'mkdir',
  'rm',
  'touch',
  'dd',
  'yes',
  'tee',
  'sed',
  'grep',
  'stat',
  'readlink',
  'dirname',
  'basename',
  'cp',
  'mv',
  'chmod',
  'ln',
  'date',
  'uname',
  'python3',
  'sha256sum',
  'timeout',
  'test',
  '[',
];
// Parts of the standard library no test needs (a third of its size).
const SKIP = new Set([
  'test',
  'idlelib',
  'tkinter',
  'ensurepip',
  'lib2to3',
  'pydoc_data',
  'turtledemo',
  'config-3.11-x86_64-linux-gnu',
]);
const BUILDER_VERSION = 1;
// Where a program is on the host, in Debian's PATH (not pyenv's shims).
function which(program) {
  for (const dir of ['/usr/bin', '/bin', '/usr/sbin', '/sbin']) {
    const path = join(dir, program);
    if (existsSync(path)) return path;
  }
  return null;
}
function walk(dir, out) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (SKIP.has(entry.name)) continue;
    const path = join(dir, entry.name);
    if (entry.isDirectory()) walk(path, out);
    else out.add(path);
  }
}
// The file and, for a symlink, what it points to (repeatedly), so the image resolves the same.
// Paths go through their directory's real path: an entry under the /lib symlink would make the
// import fail (`mkdir /lib: file exists`).
function addWithTargets(path, out) {
  out.add(join(realpathSync(dirname(path)), basename(path)));
  try {
    if (lstatSync(path).isSymbolicLink()) out.add(realpathSync(path));
  } catch {}
}
function libraries(binary) {
  const run = spawnSync('ldd', [binary], { encoding: 'utf8' });
  if (run.status !== 0) return [];
  return [...run.stdout.matchAll(/(\/\S+) \(0x/g)].map((m) => m[1]);
}
function hostFiles() {
  const files = new Set();
  for (const program of PROGRAMS) {
    const path = which(program);
    if (path === null) throw new Error(`container-image: ${program} is not on this host`);
    addWithTargets(path, files);
  }
  const python = realpathSync('/usr/bin/python3');
  const version = /python(3\.\d+)$/.exec(python)?.[1];
  if (version === undefined) throw new Error(`container-image: unexpected python3 ${python}`);
  walk(`/usr/lib/python${version}`, files);
  return [...files].sort();
}
// The shared libraries the programs and the stdlib's extension modules load (ldd: only when building).
function withLibraries(files) {
  const all = new Set(files);
  const binaries = files.filter((f) => /\/bin\/|\.so/.test(f) && statSync(f).isFile());
  for (const binary of binaries) for (const lib of libraries(binary)) addWithTargets(lib, all);
  return [...all].sort();
}
// The cgroup v2 directory this process is in (the test's leak cgroup, test/support/leak-cgroup.ts).
function ownCgroupDir() {
  try {
    const line = readFileSync('/proc/self/cgroup', 'utf8')
      .split('\n')
      .find((l) => l.startsWith('0::'));
    const mount = readFileSync('/proc/self/mountinfo', 'utf8')
      .split('\n')
      .map((l) => l.split(' '))
      .find((f) => f[f.indexOf('-') + 1] === 'cgroup2' && f[3] === '/');
    return line === undefined || mount === undefined ? null : join(mount[4] ?? '', line.slice(3));
  } catch {
    return null;
  }
}
function podman(args) {
  return run(['podman', ...args]);
}
function run([program, ...args]) {
  return execFileSync(program, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}
/**
 * The image's name, built on first use.
 *
 * @example
 * ```ts
 * const image = await hostImage(); // 'localhost/tether-host:3f2a…'
 * ```
 */
export function hostImage() {
  built ??= buildHostImage();
  return built;
}
let built = null;
async function buildHostImage() {
  const files = hostFiles();
  const hash = createHash('sha256').update(`v${BUILDER_VERSION}\n`);
  for (const f of files) {
    const s = statSync(f);
    hash.update(`${f} ${s.size} ${s.mtimeMs}\n`);
  }
  const image = `localhost/tether-host:${hash.digest('hex').slice(0, 16)}`;
  const exists = () => spawnSync('podman', ['image', 'exists', image]).status === 0;
  if (exists()) return image;
  const lock = join(tmpdir(), `${image.replace(/[/:]/g, '_')}.lock`);
  for (;;) {
    try {
      mkdirSync(lock);
      break;
    } catch {
      // A builder that died leaves its lock: older than two minutes counts as stale.
      if (Date.now() - (statSync(lock, { throwIfNoEntry: false })?.mtimeMs ?? Date.now()) > 120_000)
        rmSync(lock, { recursive: true, force: true });
      await new Promise((resolve) => setTimeout(resolve, 200));
      if (exists()) return image;
    }
  }
  const stage = mkdtempSync(join(tmpdir(), 'tether-image-'));
  try {
    if (exists()) return image;
    mkdirSync(join(stage, 'etc'));
    mkdirSync(join(stage, 'tmp'), { mode: 0o1777 });
    mkdirSync(join(stage, 'root'));
    writeFileSync(
      join(stage, 'etc/passwd'),
      'root:x:0:0:root:/root:/bin/bash\nnobody:x:65534:65534:nobody:/nonexistent:/bin/sh\n',
    );
    writeFileSync(join(stage, 'etc/group'), 'root:x:0:\nnogroup:x:65534:\n');
    const list = join(stage, 'files');
    const rel = withLibraries(files).map((f) => f.slice(1));
    // Merged /usr: /bin, /lib, /lib64 are symlinks into /usr on Debian 12; keep them so.
    for (const link of ['bin', 'sbin', 'lib', 'lib64'])
      if (lstatSync(`/${link}`, { throwIfNoEntry: false })?.isSymbolicLink()) rel.unshift(link);
    writeFileSync(list, `${rel.join('\n')}\n`);
    const tar = join(stage, 'image.tar');
    execFileSync('tar', ['-C', '/', '--no-recursion', '-cf', tar, '-T', list]);
    execFileSync('chmod', ['1777', join(stage, 'tmp')]);
    execFileSync('tar', ['-C', stage, '-rf', tar, 'etc', 'tmp', 'root']);
    podman(['import', '--change', 'CMD ["sleep","infinity"]', tar, image]);
    // Older builds (the host's files changed since) go: one image of this kind at a time.
    for (const old of podman([
      'images',
      '--format',
      '{{.Repository}}:{{.Tag}}',
      'localhost/tether-host',
    ]).split('\n')) {
      if (old !== '' && old !== image) spawnSync('podman', ['rmi', old], { stdio: 'ignore' });
    }
    return image;
  } finally {
    rmSync(stage, { recursive: true, force: true });
    rmSync(lock, { recursive: true, force: true });
  }
}
/** The label every test container carries, so a crashed run's containers can be found and removed. */
export const TEST_LABEL = 'tether-test=1';
/**
 * Starts one container of the host image (runc, ulimits and an init as FIELD-NOTES says work
 * here), labelled for removal; returns its name. `options`: its `name`, more `labels`
 * (`key=value`), more `run` flags before the image (`-v`, `--hostname`), its `command` (default
 * the image's `sleep infinity`), its `image` (default the host image). Rejects with podman's
 * error output when the run fails. It does not block the event loop (a stand-in server in the
 * test process answers meanwhile).
 *
 * @example
 * ```ts
 * const name = await startContainer(); // later: removeContainer(name)
 * ```
 */
export async function startContainer(options = {}) {
  const image = options.image ?? (await hostImage());
  const name = options.name ?? `tether-test-${process.pid}-${Math.random().toString(36).slice(2, 8)}`;
  // The container's conmon outlives `podman run`: it starts from a cgroup beside this test's
  // leak cgroup (it is removed by name, not by the leak oracle). Outside vitest it stays put.
  const own = ownCgroupDir();
  const outside =
    own === null || !basename(own).startsWith('vitest-')
      ? null
      : join(dirname(own), 'tether-test-containers');
  if (outside !== null) mkdirSync(outside, { recursive: true });
  const enter = outside === null ? [] : ['sh', '-c', 'echo $$ > "$0/cgroup.procs" && exec "$@"', outside];
  const [program, ...args] = [
    ...enter,
    'podman',
    '--runtime',
    'runc',
    'run',
    '-d',
    '--rm',
    '--init',
    '--network',
    'none',
    '--ulimit',
    'nofile=20000:20000',
    '--ulimit',
    'nproc=32768:32768',
    '--label',
    TEST_LABEL,
    '--label',
    `tether-test-pid=${process.pid}`,
    ...(options.labels ?? []).flatMap((label) => ['--label', label]),
    ...(options.args ?? []),
    '--name',
    name,
    image,
    ...(options.command ?? []),
  ];
  await new Promise((resolve, reject) =>
    execFile(program, args, { encoding: 'utf8' }, (error, _stdout, stderr) =>
      error === null ? resolve(undefined) : reject(new Error(stderr.trim() || error.message)),
    ),
  );
  return name;
}
const rmArgs = (name) => ['rm', '-f', '-t', '0', name];
/**
 * Removes a container this test process started (`podman rm -f`, which also stops it).
 *
 * @example
 * ```ts
 * removeContainer(name);
 * ```
 */
export function removeContainer(name) {
  spawnSync('podman', rmArgs(name), { stdio: 'ignore' });
}
/**
 * {@link removeContainer} without blocking the event loop (a stand-in server answers meanwhile).
 *
 * @example
 * ```ts
 * await removeContainerAsync(name);
 * ```
 */
export function removeContainerAsync(name) {
  return new Promise((resolve) => execFile('podman', rmArgs(name), () => resolve(undefined)));
}
/** Removes every test container whose test process is gone (a crashed earlier run). */
export function removeStaleContainers() {
  const run = spawnSync(
    'podman',
    ['ps', '-a', '--filter', `label=${TEST_LABEL}`, '--format', '{{.Names}} {{.Labels}}'],
    { encoding: 'utf8' },
  );
  for (const line of run.stdout?.split('\n') ?? []) {
    const [name] = line.split(' ');
    const pid = /tether-test-pid:(\d+)/.exec(line)?.[1];
    if (!name || pid === undefined) continue;
    if (!existsSync(`/proc/${pid}`)) removeContainer(name);
  }
}
