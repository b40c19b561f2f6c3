/**
 * The Node options every worker thread of the runtime starts with (the PTY host, the spill
 * pool). A worker inherits `process.execArgv` unless it is given its own, and a host started as
 * `node --input-type=module -e …` (or `--print`, `--test`, `--watch`, `--check`, …) passes
 * options that fail a worker at startup or are refused by the `Worker` constructor
 * (ERR_WORKER_INVALID_EXEC_ARGV). So each worker gets an explicit list: only the options of
 * this allowlist, which a worker accepts and which change how its modules load or how it
 * warns. Everything else is dropped:
 *
 * - eval/print/input-type, test, watch, check, interactive: about the main script, not ours;
 * - V8 and per-process options (`--expose-gc`, `--max-old-space-size`, `--stack-size`,
 *   `--title`, …): a worker refuses them, and they need not be passed: V8's flags and the
 *   process's options are process-wide and already apply to every thread (checked on Node 20:
 *   `gc` and the heap limit reach a worker started with `execArgv: []`);
 * - `NODE_OPTIONS` is not in `execArgv`; Node applies it to workers by itself.
 */

/** Options kept, and whether each takes a value (`--import x` as well as `--import=x`). */
const KEPT: ReadonlyMap<string, boolean> = new Map([
  // How modules are found and loaded (loaders such as tsx or Yarn PnP; conditions).
  ['--import', true],
  ['--require', true],
  ['-r', true],
  ['--loader', true],
  ['--experimental-loader', true],
  ['--conditions', true],
  ['-C', true],
  ['--experimental-default-type', true],
  ['--experimental-specifier-resolution', true],
  ['--preserve-symlinks', false],
  ['--preserve-symlinks-main', false],
  ['--experimental-vm-modules', false],
  ['--experimental-wasm-modules', false],
  ['--experimental-json-modules', false],
  ['--experimental-import-meta-resolve', false],
  ['--experimental-detect-module', false],
  ['--no-experimental-detect-module', false],
  ['--experimental-require-module', false],
  ['--no-experimental-require-module', false],
  // Diagnostics: stack traces and warnings as the host asked for them.
  ['--enable-source-maps', false],
  ['--no-warnings', false],
  ['--disable-warning', true],
  ['--no-deprecation', false],
  ['--throw-deprecation', false],
  ['--trace-deprecation', false],
  ['--pending-deprecation', false],
  ['--trace-warnings', false],
  ['--trace-uncaught', false],
  ['--unhandled-rejections', true],
]);

// Dropped options whose separate value is code: skipped with it, whatever that code looks like.
const DROPPED_WITH_VALUE: ReadonlySet<string> = new Set(['-e', '--eval', '-p', '--print', '-pe']);

/**
 * Filters a Node `execArgv` down to the options a worker thread accepts and needs (see the
 * module comment); pass the result as the worker's `execArgv`. Used for every worker the
 * runtime starts.
 *
 * @example
 * ```ts
 * workerExecArgv(['--input-type=module', '-e', 'import …', '--import', 'tsx', '--expose-gc']);
 * // ['--import', 'tsx']
 * new Worker(url, { execArgv: workerExecArgv() });
 * ```
 */
export function workerExecArgv(execArgv: readonly string[] = process.execArgv): string[] {
  const kept: string[] = [];
  for (let i = 0; i < execArgv.length; i++) {
    const arg = execArgv[i]!;
    const eq = arg.indexOf('=');
    const name = arg.startsWith('--') && eq > 0 ? arg.slice(0, eq) : arg;
    if (DROPPED_WITH_VALUE.has(arg)) {
      i++;
      continue;
    }
    const takesValue = KEPT.get(name);
    // Not kept: dropped. A dropped option's separate value does not start with '-' and is
    // dropped on its own turn (execArgv holds no script or script arguments).
    if (takesValue === undefined) continue;
    kept.push(arg);
    if (takesValue && name === arg && i + 1 < execArgv.length) kept.push(execArgv[++i]!);
  }
  return kept;
}
