import { TetherError } from './errors.js';
import { createSpillPool } from './output/spill.js';
import { type RuntimeOptions, resolveOptions } from './runtime-options.js';
import { runShell } from './shell/shell-service.js';
import type { ShellRequest, ShellResult } from './shell/shell-types.js';
import { createLocalProvider } from './subprocess/local-provider.js';

/** `rt.shell`: one-shot commands (SPEC section 2). */
export interface ShellService {
  run(req: ShellRequest): Promise<ShellResult>;
}

/** The composition root's product (SPEC section 9). */
export interface Runtime {
  readonly shell: ShellService;
  /** D2: ends every process, timer and worker the runtime started. Idempotent. */
  dispose(): Promise<void>;
}

/**
 * Creates a runtime: the one place that wires the provider, the spill worker and the services.
 *
 * @example
 * ```ts
 * import { createRuntime } from 'tether';
 * const rt = await createRuntime();
 * const { exitCode, output } = await rt.shell.run({ command: 'echo hello' });
 * await rt.dispose();
 * ```
 */
export async function createRuntime(options?: RuntimeOptions): Promise<Runtime> {
  const opts = resolveOptions(options);
  const provider = opts.provider ?? createLocalProvider({ env: opts.env });
  const spillPool = opts.spillDir === false ? null : createSpillPool({ dir: opts.spillDir });
  const inFlight = new Set<Promise<unknown>>();
  const lifetime = new AbortController();
  let disposing: Promise<void> | null = null;

  // Every call is tracked so dispose can wait for it; nothing starts after dispose began.
  const track = <T>(work: () => Promise<T>): Promise<T> => {
    if (disposing)
      return Promise.reject(
        new TetherError('RUNTIME_DISPOSED', 'the runtime was disposed; create a new one'),
      );
    const promise = Promise.resolve().then(work); // misuse rejects; it never throws synchronously
    inFlight.add(promise);
    const forget = () => inFlight.delete(promise);
    promise.then(forget, forget);
    return promise;
  };

  const shellDeps = {
    provider,
    lifetime: lifetime.signal,
    spillPool,
    defaults: {
      shell: opts.shell,
      cwd: opts.cwd,
      outputCapChars: opts.outputCapChars,
      cleanupGraceMs: opts.cleanupGraceMs,
      drainMs: opts.drainMs,
    },
  };

  return {
    shell: {
      run: (req) => track(() => runShell(shellDeps, req)),
    },
    dispose() {
      disposing ??= (async () => {
        lifetime.abort();
        await Promise.allSettled([...inFlight]);
        await spillPool?.destroy();
      })();
      return disposing;
    },
  };
}
