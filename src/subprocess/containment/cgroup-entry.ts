import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** Where the leader finds the `cgroup.procs` file to write itself into. */
export const CGROUP_PROCS_ENV = 'TETHER_CGROUP_PROCS';

/**
 * The `BASH_ENV` startup file (K1): a non-interactive `bash -c` sources it before it runs the
 * command, so the shell writes its own pid into its tree's cgroup before it can fork anything,
 * at the cost of one small file read instead of one more exec. It fails closed (exit 125,
 * nothing of the command runs) when the write fails, and unsets itself so nested shells and
 * scripts do not run it again.
 */
export const BASH_ENTRY_SCRIPT = `# tether: enter the tree's cgroup before the command runs (K1)
{ builtin echo $$ >"$${CGROUP_PROCS_ENV}"; } 2>/dev/null || { builtin echo "tether: could not enter the cgroup '$${CGROUP_PROCS_ENV}'; the command did not run" >&2; builtin exit 125; }
builtin unset BASH_ENV ${CGROUP_PROCS_ENV}
`;

/**
 * The generic entry (K1): `sh -c SCRIPT <cgroup.procs> <program> <args…>` writes its pid into
 * the cgroup and then execs the program (same pid), for every leader that is not a `bash -c`
 * (PTY shells, other programs). One more exec; fails closed like the bash file.
 */
export const SH_ENTRY_SCRIPT = `{ echo $$ >"$0"; } 2>/dev/null || { echo "tether: could not enter the cgroup '$0'; the program did not run" >&2; exit 125; }; exec "$@"`;

/**
 * Writes the bash startup file under `dir` (atomically, only when missing or different) and
 * returns its path.
 *
 * @example
 * ```ts
 * const bashEnv = installBashEntry(stateDir);
 * spawn('/bin/bash', ['-c', cmd], { env: { ...env, BASH_ENV: bashEnv, TETHER_CGROUP_PROCS: procs } });
 * ```
 */
export function installBashEntry(dir: string): string {
  const path = join(dir, 'enter-cgroup.bash');
  let current: string | null = null;
  try {
    current = readFileSync(path, 'utf8');
  } catch {}
  if (current !== BASH_ENTRY_SCRIPT) {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    const temp = `${path}.${process.pid}.tmp`;
    writeFileSync(temp, BASH_ENTRY_SCRIPT, { mode: 0o644 });
    renameSync(temp, path);
  }
  return path;
}

/**
 * Whether `argv` is a non-interactive `bash -c …` (the shape `shell.run` spawns), which can
 * enter through `BASH_ENV` instead of a wrapper. The caller's own `BASH_ENV` wins: then the
 * wrapper is used.
 *
 * @example
 * ```ts
 * entersThroughBashEnv(['/bin/bash', '-c', 'true'], env); // true
 * ```
 */
export function entersThroughBashEnv(
  argv: readonly string[],
  env: Readonly<Record<string, string>>,
): boolean {
  const file = argv[0] ?? '';
  return (file === 'bash' || file.endsWith('/bash')) && argv[1] === '-c' && env.BASH_ENV === undefined;
}
