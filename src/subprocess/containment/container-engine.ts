import { execFile } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { delimiter, join } from 'node:path';

/** The container engines whose CLI Tether drives (X5, X6). */
export type ContainerEngine = 'podman' | 'docker';

/** What one engine command did: its exit code (`null`: it could not run or was killed), its output. */
export interface EngineResult {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/**
 * Runs one engine command (`podman run …`, `podman rm …`) to its end, bounded by `timeoutMs`
 * (then SIGKILLed: the result says so in `stderr`). Never rejects: a command that cannot run is
 * `code: null` with the reason in `stderr`.
 *
 * @example
 * ```ts
 * const r = await runEngine(['podman', 'ps', '-a', '--format', 'json'], { timeoutMs: 5000 });
 * if (r.code !== 0) console.error(r.stderr);
 * ```
 */
export function runEngine(
  argv: readonly [string, ...string[]],
  opts: { readonly timeoutMs: number },
): Promise<EngineResult> {
  const [program, ...args] = argv;
  return new Promise((resolve) => {
    execFile(
      program,
      args,
      { timeout: opts.timeoutMs, killSignal: 'SIGKILL', maxBuffer: 16 * 1024 * 1024, encoding: 'utf8' },
      (error, stdout, stderr) => {
        if (error === null) return resolve({ code: 0, stdout, stderr });
        const failed = error as NodeJS.ErrnoException & { code?: unknown; killed?: boolean };
        const code = typeof failed.code === 'number' ? failed.code : null;
        const why = failed.killed
          ? `${program} did not finish within ${opts.timeoutMs} ms (killed)`
          : code === null
            ? `cannot run ${program}: ${failed.message}`
            : '';
        resolve({ code, stdout, stderr: [stderr.trim(), why].filter((s) => s !== '').join('\n') });
      },
    );
  });
}

/**
 * The engine's executable on the PATH, or `null` (checked without running it, so a machine
 * without the engine pays nothing).
 *
 * @example
 * ```ts
 * findEngine('podman'); // '/usr/bin/podman'
 * ```
 */
export function findEngine(engine: ContainerEngine): string | null {
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    if (dir === '') continue;
    const file = join(dir, engine);
    try {
      accessSync(file, constants.X_OK);
      return file;
    } catch {}
  }
  return null;
}

/**
 * The arguments of a forced removal: podman's `rm -f` first waits out the stop timeout
 * (10 s) unless told `-t 0`; docker's kills at once and has no such flag.
 *
 * @example
 * ```ts
 * await runEngine(['podman', ...removeArgs('podman', 'c1')], { timeoutMs: 30_000 });
 * ```
 */
export function removeArgs(engine: ContainerEngine, container: string): string[] {
  return engine === 'podman' ? ['rm', '-f', '-t', '0', container] : ['rm', '-f', container];
}

/**
 * Whether a failed removal failed because the container is gone already (its `--rm` won the
 * race, or another reaper was first): that is a removal too.
 *
 * @example
 * ```ts
 * if (r.code !== 0 && !isGone(r.stderr)) throw new Error(r.stderr);
 * ```
 */
export function isGone(stderr: string): boolean {
  return /no such container|no container with (name or )?id/i.test(stderr);
}
