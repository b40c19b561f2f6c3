import { WRAPPERS } from './wrapper-table.js';

/**
 * The programs one simple command runs (SPEC A2): the command itself, and what a wrapper it
 * names runs in turn (`nohup npm test` runs `npm test`; `find . -exec rm {} ;` runs `rm`), so
 * a rule on `rm` is not slipped past with `env rm`, `command rm` or `/bin/rm`. What cannot be
 * told statically (`eval`, `bash -c '…'`, a name from a variable, a wrapper option we do not
 * know) is named in `problems`: no rule may allow it.
 *
 * @example
 * ```ts
 * commandTargets(['nohup', 'nice', '-n', '5', 'rm', '-rf', '/']);
 * // { targets: [{ argv: ['nohup', …], wrapper: true }, …, { argv: ['rm', '-rf', '/'], wrapper: false }], problems: [] }
 * ```
 */
export function commandTargets(argv: readonly (string | null)[]): {
  targets: { argv: readonly (string | null)[]; wrapper: boolean }[];
  problems: string[];
} {
  const targets: { argv: readonly (string | null)[]; wrapper: boolean }[] = [];
  const problems: string[] = [];
  const queue: (readonly (string | null)[])[] = [argv];
  while (queue.length > 0 && targets.length < 16) {
    const current = queue.shift()!;
    const name = current[0];
    if (name === undefined) continue;
    if (name === null) {
      problems.push('a variable or expansion in command position');
      targets.push({ argv: current, wrapper: false });
      continue;
    }
    const base = basename(name);
    const problem = shapeProblem(base, current);
    if (problem) problems.push(problem);
    const inner = WRAPPERS[base]?.(current.slice(1));
    if (inner === undefined) {
      targets.push({ argv: current, wrapper: false });
    } else if (inner === 'unknown') {
      problems.push(`which command \`${base}\` runs (an option it takes is not known here)`);
      targets.push({ argv: current, wrapper: false });
    } else {
      // `find` is judged itself as well (`-delete`); the others only pass their command on.
      targets.push({ argv: current, wrapper: base !== 'find' && inner.length > 0 });
      queue.push(...inner);
    }
  }
  return { targets, problems };
}

/**
 * The last path segment of a command name (`/usr/bin/rm` → `rm`).
 *
 * @example
 * ```ts
 * basename('./git'); // 'git'
 * ```
 */
export function basename(name: string): string {
  return name.slice(name.lastIndexOf('/') + 1);
}

// Commands that run a string, rebind what names mean, or replace the shell (SPEC A2).
const RUNS_STRING: Readonly<Record<string, string>> = {
  eval: '`eval` runs a string',
  exec: '`exec` replaces the shell',
  source: '`source` runs a file as shell code',
  '.': '`.` runs a file as shell code',
  alias: 'an alias definition',
  enable: '`enable` loads or turns off builtins, which changes command lookup',
  hash: '`hash` rebinds command names (`hash -p`), which changes command lookup',
  coproc: 'a coprocess',
  fc: '`fc` re-runs history',
};
const SHELLS = new Set(['sh', 'bash', 'dash', 'zsh', 'ksh', 'mksh', 'ash', 'fish']);

function shapeProblem(base: string, argv: readonly (string | null)[]): string | null {
  const known = RUNS_STRING[base];
  if (known) return known;
  if (!SHELLS.has(base)) return null;
  const args = argv.slice(1);
  if (args.some((a) => a === null || /^-[a-zA-Z]*c/.test(a))) return `\`${base} -c\` runs a string`;
  if (!args.some((a) => a !== null && !a.startsWith('-') && !a.startsWith('+'))) {
    return `\`${base}\` reading commands from its input`;
  }
  return null;
}
