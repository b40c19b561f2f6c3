import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { execa } from 'execa';
import ts from 'typescript';
import { matchesOutput, readmeBlocks } from '../docs/readme-blocks.js';

// X6 tests of owners placed in containers and pods share these (test/remote/*-placement.test.ts).
const root = fileURLToPath(new URL('../..', import.meta.url));
const DIST = new URL('../../dist/src/index.js', import.meta.url).href;

/** A runtime in a child Node process, waiting to be SIGKILLed (K3's crash). */
export interface CrashChild {
  readonly pid: number;
  readonly process: ChildProcess;
  readonly exited: Promise<void>;
}

/**
 * A runtime (from dist/) in a child Node process whose owner, placed with `placement` (or not
 * placed: `null`), runs a background `sleep 300`; resolves with its pid once the job runs, then
 * the child waits to be SIGKILLed (as test/containment/crash-child.ts).
 *
 * @example
 * ```ts
 * const child = await startCrashChild(stateDir, placement);
 * child.process.kill('SIGKILL');
 * await child.exited;
 * ```
 */
export async function startCrashChild(stateDir: string, placement: object | null): Promise<CrashChild> {
  const script = `(async () => {
    const { createRuntime } = await import(${JSON.stringify(DIST)});
    const o = JSON.parse(process.env.X6_CHILD);
    const rt = await createRuntime({ cwd: '/tmp', stateDir: o.stateDir, limits: { cleanupGraceMs: 300 } });
    const owner = rt.owners.host(o.placement === null ? {} : { placement: o.placement }).token;
    await rt.shell.background(owner, { command: 'sleep 300' });
    console.log(JSON.stringify({ pid: process.pid }));
    process.stdin.resume();
  })()`;
  const child = spawn(process.execPath, ['-e', script], {
    env: { ...process.env, X6_CHILD: JSON.stringify({ stateDir, placement }) },
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const line = await new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout! }).once('line', resolve);
    child.once('exit', (code) => reject(new Error(`the crash child exited (${code}) before it reported`)));
  });
  return { pid: (JSON.parse(line) as { pid: number }).pid, process: child, exited };
}

/**
 * SIGKILLs a child process this test started, and waits for its exit.
 *
 * @example
 * ```ts
 * await stopProcess(child);
 * ```
 */
export async function stopProcess(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const gone = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGKILL');
  await gone;
}

/** The agent example of docs/agents.md, placed, in an app directory of its own. */
export interface AgentsExample {
  /** The app's directory (the example's cwd and TMPDIR: its runtime's state dir is below it). */
  readonly app: string;
  /** Runs the example with `node`; its result. */
  run(): Promise<{
    readonly exitCode?: number | undefined;
    readonly stdout: string;
    readonly stderr: string;
  }>;
  /** Whether `stdout` is the documented output (the first command's duration aside: see below). */
  matches(stdout: string): boolean;
  /** Removes the app directory. */
  remove(): void;
}

/**
 * Writes the agent example of docs/agents.md, changed in one place only — where the agent runs:
 * `placement: placementFor(app)` — as an ES module in a fresh app directory that imports
 * `tether-runtime` (this package, linked).
 *
 * @example
 * ```ts
 * const example = agentsExample((app) => ({ engine: 'podman', image, runArgs: ['-v', `${app}:${app}:ro`] }));
 * const r = await example.run();
 * expect(example.matches(r.stdout)).toBe(true);
 * ```
 */
export function agentsExample(placementFor: (app: string) => object): AgentsExample {
  const blocks = readmeBlocks(readFileSync(join(root, 'docs/agents.md'), 'utf8'));
  const at = blocks.findIndex((b) => b.mark === 'run' && b.code.includes('rt.agents.create({'));
  const [example, output] = [blocks[at], blocks[at + 1]];
  if (example === undefined || output?.mark !== 'output') throw new Error('docs/agents.md: no agent example');
  const app = mkdtempSync(join(tmpdir(), 'tether-x6-app-'));
  mkdirSync(join(app, 'node_modules'));
  symlinkSync(root, join(app, 'node_modules', 'tether-runtime'));
  writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'x6-app', type: 'module' }));
  const placed = example.code.replace(
    'rt.agents.create({',
    `rt.agents.create({\n  placement: ${JSON.stringify(placementFor(app))},`,
  );
  if (placed === example.code)
    throw new Error('docs/agents.md: the example no longer calls rt.agents.create({');
  const js = ts.transpileModule(placed, {
    compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 },
  }).outputText;
  writeFileSync(join(app, 'example.mjs'), js);
  return {
    app,
    run: () =>
      execa(process.execPath, ['example.mjs'], {
        cwd: app,
        env: { TMPDIR: app },
        reject: false,
        timeout: 120_000,
      }),
    // The first command's duration includes the container's or pod's start (seconds on a loaded
    // machine) where the documented run shows `… ms`; every other line must be as documented.
    matches: (stdout) =>
      matchesOutput(output.code, stdout.replace(/^\[exit code 0 · \d+\.\d s\]$/m, '[exit code 0 · 1 ms]')),
    remove: () => rmSync(app, { recursive: true, force: true }),
  };
}

/** Whether podman has a container of that name (the one behind a placed owner or a stand-in pod). */
export const containerExists = (name: string): boolean =>
  spawnSync('podman', ['container', 'exists', name]).status === 0;
