import { isAscii } from 'node:buffer';
import type { Readable } from 'node:stream';
import { StringDecoder } from 'node:string_decoder';
import { setTimeout as sleep } from 'node:timers/promises';
import { assertArgument } from '../errors.js';
import type { JobExit, JobHooks, JobInfo, JobRunContext, JobService, JobSpec } from '../jobs/job-types.js';
import { verdictFact } from '../observe/verdict-fact.js';
import { TurnBudget } from '../output/turn-budget.js';
import type { AgentOwnerToken } from '../owners/owner-token.js';
import { signalProcessGroup } from '../subprocess/identity.js';
import type { SubprocessHandle } from '../subprocess/types.js';
import {
  closedWithin,
  NON_INTERACTIVE_ENV,
  resolveCwd,
  type ShellDeps,
  shellPolicyCheck,
  validateShellRequest,
} from './shell-service.js';
import type { ShellRequest } from './shell-types.js';

/** How long an interrupted job may take to exit on its own before the tree kill (J7). */
const INTERRUPT_GRACE_MS = 200;
const LABEL_CHARS = 120;

/**
 * `rt.shell.background` (C3 with A1): the request is checked, the policy decides, and only
 * then does `jobs.start` reserve capacity, spawn and register — a denial starts and registers
 * nothing. `spec` is the producer to start (the composition root's carries the owner's
 * identity env, S3); by default the plain shell producer.
 *
 * @example
 * ```ts
 * const job = await startShellJob(deps, jobs, owner, { command: 'npm test' });
 * ```
 */
export async function startShellJob(
  deps: ShellDeps,
  jobs: Pick<JobService, 'start'>,
  owner: AgentOwnerToken,
  req: ShellRequest,
  spec: JobSpec = shellJobSpec(deps, owner, req),
): Promise<JobInfo> {
  await deps.decide?.(shellPolicyCheck('shell.background', req, deps.defaults.cwd, owner));
  return jobs.start(owner, spec, req.signal !== undefined ? { signal: req.signal } : {});
}

/**
 * The shell producer for the job registry (C3): everything is resolved here, before
 * `jobs.start` reserves capacity and calls `run`, so the transfer of ownership is atomic.
 *
 * @example
 * ```ts
 * const info = await jobs.start(owner, shellJobSpec(deps, owner, { command: 'npm test' }), { signal });
 * ```
 */
export function shellJobSpec(deps: ShellDeps, owner: AgentOwnerToken, req: ShellRequest): JobSpec {
  validateShellRequest(req);
  assertArgument(
    req.stdio !== 'inherit',
    "stdio 'inherit' is for shell.run only: a background job's output is read with jobs.read; leave stdio out",
  );
  const { defaults } = deps;
  const spawnSpec = {
    argv: [req.shell ?? defaults.shell, '-c', req.command] as const,
    cwd: resolveCwd(defaults.cwd, req.cwd),
    stdio: { stdin: 'ignore', stdout: 'pipe', stderr: 'pipe' } as const,
    cleanupGraceMs: defaults.cleanupGraceMs,
    env: { ...NON_INTERACTIVE_ENV, ...req.env },
  };
  return {
    kind: 'shell',
    label: req.command.length > LABEL_CHARS ? `${req.command.slice(0, LABEL_CHARS - 1)}…` : req.command,
    run: async (ctx) => {
      const feed = new OutputDecoder(ctx);
      const child = await deps.provider(owner, req).spawn({ ...spawnSpec, onOutput: feed.write });
      return track(child, ctx, deps, req.timeoutMs, feed);
    },
  };
}

/**
 * The shell producer for a process a previous runtime started (K6: `rt.jobs.adopt`): its output,
 * exit and kill go through the same hooks as a job started here (its timeout did not survive).
 *
 * @example
 * ```ts
 * await jobs.start(owner, adoptedShellJobSpec(deps, 'npm test', handle), { resume: { id, outputStart } });
 * ```
 */
export function adoptedShellJobSpec(deps: ShellDeps, label: string, child: SubprocessHandle): JobSpec {
  return { kind: 'shell', label, run: (ctx) => track(child, ctx, deps, undefined, new OutputDecoder(ctx)) };
}

// From here on the registry owns the process through these hooks.
function track(
  child: SubprocessHandle,
  ctx: JobRunContext,
  deps: ShellDeps,
  timeoutMs: number | undefined,
  feed: OutputDecoder,
): JobHooks {
  const streams = [child.stdout, child.stderr].filter((s): s is Readable => s !== null);
  // Fed (the provider read the pipes into its shared buffer and called `feed.write`): the
  // streams only say when they closed. Otherwise each stream is decoded from its 'data'.
  if (child.outputFed) feed.attach(streams);
  const piped = [
    [child.stdout, 1],
    [child.stderr, 2],
  ] as const;
  const closed = child.outputFed
    ? Promise.all(streams.map(closedOf)).then(() => feed.end())
    : Promise.all(piped.map(([s, fd]) => (s === null ? undefined : feed.decodeFrom(s, fd))));
  // `deadline` owns the timeout timer (ends at exit); `stop` owns the other waits (end at done).
  const deadline = new AbortController();
  const stop = new AbortController();
  let timedOut = false;

  let cancelling: Promise<void> | null = null;
  const cancel = (): Promise<void> => {
    cancelling ??= (async () => {
      // J7: a real interrupt to the foreground group first, then the whole tree.
      // A remote handle signals on its own host; a local one through this kernel.
      const interrupted = child.signalGroup
        ? await child.signalGroup('SIGINT').catch(() => false)
        : signalProcessGroup(child.identity, 'SIGINT');
      if (interrupted) {
        await Promise.race([
          child.exited,
          sleep(INTERRUPT_GRACE_MS, undefined, { signal: stop.signal }).catch(() => {}),
        ]);
      }
      await child.kill();
    })();
    return cancelling;
  };
  if (timeoutMs !== undefined) {
    sleep(timeoutMs, undefined, { signal: deadline.signal }).then(
      () => {
        timedOut = true;
        void cancel();
      },
      () => {},
    );
  }

  const done = (async (): Promise<JobExit> => {
    const exit = await child.exited;
    deadline.abort(JOB_SETTLED);
    const drained = await drainedWhileFlowing(closed, deps.defaults.drainMs, feed);
    stop.abort(JOB_SETTLED);
    const verdict = await child.kill(); // orphans of a finished job are swept too
    deps.facts?.emit(verdictFact(`job:${ctx.jobId}`, verdict)); // V1
    if (!drained) for (const s of streams) s.destroy();
    await cancelling;
    const notes = [
      exit.lost ? exit.lost.reason : null, // issue 30.3: the spawner died, and what is unknown
      timedOut ? `timed out after ${timeoutMs} ms` : null,
      verdict.status === 'escaped'
        ? `could not kill: ${[...verdict.escaped, ...verdict.stuck].join(', ')}`
        : null,
    ].filter((n) => n !== null);
    return {
      exitCode: exit.exitCode,
      signal: exit.signal,
      error: notes.length > 0 ? notes.join('; ') : null,
    };
  })();

  return { cancel, done };
}

// The reason a job's own waits are ended with: one shared value, so that ending them does not
// build a DOMException and its stack per job (`abort()` without one does; P8: 200 jobs/s).
const JOB_SETTLED = Object.freeze(new Error('the job settled'));

// Output is decoded by StringDecoder, each stream on its own (StringDecoder is what `setEncoding('utf8')` uses: 3–5× faster here than a streaming
// TextDecoder (ICU), with the same U+FFFD for invalid bytes (issue 15)). Chunks are decoded in
// slices of at most DECODE_SLICE bytes: a string of 128 Ki characters or more is a V8
// large-object allocation (fresh pages each time), measured here at 130–170 MB/s against
// 5–8 GB/s for 32–96 KiB (a remote job's frames are 128 KiB; X1 throughput).
const DECODE_SLICE = 65_536;
// An all-ASCII chunk at least this big is kept as bytes (`appendAscii`): no string is made
// until it is read. Smaller ones are decoded, so a buffer that backs a tiny view (a pipe read
// of a few bytes) is not kept alive for it.
const ASCII_BYTES_MIN = 16_384;
// Output bytes all fed jobs of this thread may take in one turn of the event loop (issue
// 30.6): past it, a job's pipes pause until the next turn, so 64 floods cost the loop a few ms
// per turn rather than what libuv can read in one poll phase (32 reads of 64 KiB per pipe).
const FEED_BYTES_PER_TURN = 1_048_576;
const feedBudget = new TurnBudget(FEED_BYTES_PER_TURN);
// More than two pipes of 1 MiB (what a FIFO holds as root) can hold after the leader's exit.
const BACKLOG_MAX_BYTES = 4 * 1_048_576;
// What a resumed job is charged: one read of the spawner's shared buffer.
const READ_BYTES = 65_536;

// One stream's text, with a decoder of its own: a character that stdout splits across two reads
// joins up whatever stderr wrote in between. All-ASCII slices of at least ASCII_BYTES_MIN are
// kept as bytes (`keep`): copied when `bytes` is a reader's reused buffer, else the chunk itself.
class StreamText {
  readonly #decoder = new StringDecoder('utf8');
  // The decoder may hold the start of a character only if the last bytes it took ended in a
  // non-ASCII byte; until the next ASCII byte it must see everything.
  #held = false;

  write(ctx: JobRunContext, bytes: Uint8Array, reused: boolean): void {
    const keep = reused ? ctx.appendAsciiCopy : ctx.appendAscii;
    for (let at = 0; at < bytes.length; at += DECODE_SLICE) {
      const slice = bytes.length <= DECODE_SLICE ? bytes : bytes.subarray(at, at + DECODE_SLICE);
      if (!this.#held && keep && slice.length >= ASCII_BYTES_MIN && isAscii(slice)) {
        keep(slice as Buffer);
        continue;
      }
      const text = this.#decoder.write(slice as Buffer);
      this.#held = slice[slice.length - 1]! >= 0x80;
      if (text.length > 0) ctx.append(text);
    }
  }

  end(ctx: JobRunContext): void {
    const rest = this.#decoder.end();
    if (rest.length > 0) ctx.append(rest);
  }
}

/**
 * Decodes a job's output bytes into it as they are read (J5), each stream with its own decoder
 * (StreamText). Fed (`write`, the spawn's `onOutput`): the provider read the pipes into its
 * reused buffer, so all-ASCII reads are copied into recycled slabs (no string, no buffer
 * allocated per read: issue 30.6), and the turn budget pauses the pipes past its share.
 * Otherwise `decodeFrom` takes each stream's 'data' chunks.
 */
class OutputDecoder {
  readonly #ctx: JobRunContext;
  readonly #text = { 1: new StreamText(), 2: new StreamText() };
  #streams: readonly Readable[] = [];
  #paused = false;
  /** Bytes read so far (fed or from 'data'). */
  bytes = 0;
  /** How often the turn budget paused this job's pipes. */
  pauses = 0;

  constructor(ctx: JobRunContext) {
    this.#ctx = ctx;
  }

  /** The streams whose reads feed this decoder: paused while the turn's budget is spent. */
  attach(streams: readonly Readable[]): void {
    this.#streams = streams;
  }

  readonly write = (bytes: Uint8Array, fd: 1 | 2 = 1): void => {
    this.bytes += bytes.length;
    this.#text[fd].write(this.#ctx, bytes, true);
    if (!feedBudget.spend(bytes.length) && !this.#paused && this.#streams.length > 0) {
      this.#paused = true;
      this.pauses++;
      for (const stream of this.#streams) stream.pause();
      feedBudget.later(() => {
        this.#paused = false;
        for (const stream of this.#streams) if (!stream.destroyed) stream.resume();
      }, READ_BYTES);
    }
  };

  /** Decodes `stream` (the job's `fd`) from its 'data' events; resolves once it closed. */
  decodeFrom(stream: Readable, fd: 1 | 2): Promise<void> {
    return new Promise((resolve) => {
      stream.on('data', (chunk: Buffer) => {
        this.bytes += chunk.length;
        this.#text[fd].write(this.#ctx, chunk, false);
      });
      stream.on('error', () => {});
      stream.once('close', () => {
        this.#text[fd].end(this.#ctx);
        resolve();
      });
    });
  }

  /** Whether its pipes wait for a later turn right now. */
  get paused(): boolean {
    return this.#paused;
  }

  /** The fed streams closed: what a decoder still holds is U+FFFD. */
  end(): void {
    this.#text[1].end(this.#ctx);
    this.#text[2].end(this.#ctx);
  }
}

// Resolves once `stream` closed (its bytes went to a feed).
function closedOf(stream: Readable): Promise<void> {
  return new Promise((resolve) => {
    stream.on('error', () => {});
    stream.once('close', () => resolve());
  });
}

// After the leader's exit: waits for the pipes to close, `ms` at a time for as long as this
// job's reads were held back by the turn budget in that time (a backlog read a slice per turn
// is not a leftover process holding the pipes open), at most until more arrived since the exit
// than two pipes hold; false once a window passed without the close and without a pause (the
// pipes were read at full pace: someone still holds them; the sweep after the drain finds it).
async function drainedWhileFlowing(
  closed: Promise<unknown>,
  ms: number,
  feed: OutputDecoder,
): Promise<boolean> {
  const atExit = feed.bytes;
  for (;;) {
    const pausesBefore = feed.pauses;
    if (await closedWithin(closed, ms)) return true;
    const heldBack = feed.pauses !== pausesBefore || feed.paused;
    if (!heldBack || feed.bytes - atExit > BACKLOG_MAX_BYTES) return false;
  }
}
