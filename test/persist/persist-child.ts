import { type ChildProcess, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';

/** What a persisted runtime in a child process reports, line by line, on its stdout. */
export type ChildLine =
  | {
      readonly kind: 'ready';
      readonly pid: number;
      readonly jobs: readonly string[];
      readonly terminal: string | null;
    }
  | { readonly kind: 'page'; readonly job: string; readonly cursor: number; readonly text: string };

/** A runtime with `persist` in a child Node process (K6): the parent SIGKILLs it mid-work. */
export interface PersistChild {
  readonly process: ChildProcess;
  readonly ready: Extract<ChildLine, { kind: 'ready' }>;
  /** Every complete page line so far (a line cut by the SIGKILL is not one). */
  readonly pages: Extract<ChildLine, { kind: 'page' }>[];
  readonly exited: Promise<void>;
}

const DIST = new URL('../../dist/src/index.js', import.meta.url).href;

/**
 * Starts `createRuntime({ stateDir, persist })` in a child process, starts `jobs` as background
 * jobs of a host owner, opens a terminal that runs `terminal` (when given), reports, then reads
 * the first job (when `read`) page by page and prints each page (cursor after it and text) as one
 * JSON line, written synchronously before the next read.
 */
export async function startPersistChild(opts: {
  readonly stateDir: string;
  readonly name: string;
  readonly lingerMs: number;
  readonly jobs: readonly string[];
  readonly terminal?: string;
  readonly read?: boolean;
  /** limits.jobRetentionChars (the helper keeps as many bytes of each job past its ack); default 4 MiB. */
  readonly retention?: number;
  /** Start them as the agent of this session (else a host lease). */
  readonly session?: string;
}): Promise<PersistChild> {
  // CommonJS eval (an async IIFE): --input-type would be inherited by the PTY worker thread.
  const script = `(async () => {
    const { writeSync } = require('node:fs');
    const { createRuntime } = await import(${JSON.stringify(DIST)});
    const opts = JSON.parse(process.env.PERSIST_CHILD);
    const rt = await createRuntime({ stateDir: opts.stateDir, persist: { name: opts.name, lingerMs: opts.lingerMs },
      limits: { cleanupGraceMs: 300, jobRetentionChars: opts.retention ?? 4194304 } });
    const owner = opts.session ? rt.agents.create({ sessionId: opts.session, onTurn() {} }).owner : rt.owners.host().token;
    const jobs = [];
    for (const command of opts.jobs) jobs.push((await rt.shell.background(owner, { command })).id);
    let terminal = null;
    if (opts.terminal) {
      terminal = (await rt.terminals.open(owner, { cols: 80, rows: 24 })).id;
      await rt.terminals.send(owner, terminal, opts.terminal + '\\r', { timeoutMs: 2000 });
    }
    const line = (o) => writeSync(1, JSON.stringify(o) + '\\n');
    line({ kind: 'ready', pid: process.pid, jobs, terminal });
    if (!opts.read) return;
    let cursor = 0;
    for (;;) {
      const page = await rt.jobs.read(owner, jobs[0], cursor, 200000);
      if (page.text.length > 0) line({ kind: 'page', job: jobs[0], cursor: page.cursor, text: page.text });
      cursor = page.cursor;
      if (page.done) break;
      if (page.text.length === 0) await new Promise((r) => setTimeout(r, 2));
    }
  })()`;
  const child = spawn(process.execPath, ['-e', script], {
    env: { ...process.env, PERSIST_CHILD: JSON.stringify(opts) },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  // 'close': after the last line of its stdout was read, not only its exit.
  const exited = new Promise<void>((resolve) => child.once('close', () => resolve()));
  const pages: Extract<ChildLine, { kind: 'page' }>[] = [];
  const ready = await new Promise<Extract<ChildLine, { kind: 'ready' }>>((resolve, reject) => {
    const lines = createInterface({ input: child.stdout! });
    lines.on('line', (text) => {
      let parsed: ChildLine;
      try {
        parsed = JSON.parse(text) as ChildLine;
      } catch {
        return; // the line the SIGKILL cut
      }
      if (parsed.kind === 'ready') resolve(parsed);
      else pages.push(parsed);
    });
    child.once('exit', (code) => reject(new Error(`the persist child exited (${code}) before it reported`)));
  });
  return { process: child, ready, pages, exited };
}

/** Kills the child with SIGKILL (no dispose, no goodbye) and waits for its end. */
export async function crash(child: PersistChild): Promise<void> {
  child.process.kill('SIGKILL');
  await child.exited;
}
