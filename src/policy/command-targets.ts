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
  trap: '`trap` runs a string later',
  enable: '`enable` loads builtins',
  hash: '`hash` rebinds command names',
  coproc: 'a coprocess',
  fc: '`fc` re-runs history',
  let: 'arithmetic on variables (bash may run what they hold)',
};
const SHELLS = new Set(['sh', 'bash', 'dash', 'zsh', 'ksh', 'mksh', 'ash', 'fish', 'busybox']);

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

type Unwrap = (args: readonly (string | null)[]) => (readonly (string | null)[])[] | 'unknown';

// Skips the options of a wrapper: `flags` take no value, `valued` take the next word (or `=v`).
function afterOptions(flags: string, valued: string, longs: readonly string[] = []): Unwrap {
  return (args) => {
    let i = 0;
    while (i < args.length) {
      const a = args[i];
      if (a === null || a === undefined) return 'unknown';
      if (a === '--') return [args.slice(i + 1)];
      if (!a.startsWith('-') || a === '-') break;
      if (a.startsWith('--')) {
        const [long, value] = a.slice(2).split('=', 2);
        if (!longs.includes(long!)) return 'unknown';
        if (value === undefined && longs.includes(`${long}=`)) i++;
        i++;
        continue;
      }
      const letters = a.slice(1);
      let takesNext = false;
      for (let k = 0; k < letters.length; k++) {
        const c = letters[k]!;
        if (valued.includes(c)) {
          takesNext = k === letters.length - 1; // `-n5` carries its value; `-n 5` takes the next word
          break;
        }
        if (!flags.includes(c)) return 'unknown';
      }
      i += takesNext ? 2 : 1;
    }
    return [args.slice(i)];
  };
}

const WRAPPERS: Readonly<Record<string, Unwrap>> = {
  command: afterOptions('pvV', ''),
  builtin: (args) => [args],
  nohup: afterOptions('', ''),
  time: afterOptions('p', ''),
  nice: (args) => {
    const first = args[0];
    if (first !== null && first !== undefined && /^-\d+$/.test(first)) return [args.slice(1)];
    return afterOptions('', 'n', ['adjustment', 'adjustment='])(args);
  },
  stdbuf: afterOptions('', 'ioe', ['input', 'input=', 'output', 'output=', 'error', 'error=']),
  timeout: (args) => {
    const rest = afterOptions('v', 'sk', [
      'preserve-status',
      'foreground',
      'verbose',
      'signal',
      'signal=',
      'kill-after',
      'kill-after=',
    ])(args);
    if (rest === 'unknown') return rest;
    return [rest[0]!.slice(1)]; // the first operand is the duration
  },
  env: (args) => {
    const rest = afterOptions('i0', 'uC', [
      'ignore-environment',
      'null',
      'unset',
      'unset=',
      'chdir',
      'chdir=',
    ])(args);
    if (rest === 'unknown') return rest;
    const words = rest[0]!;
    let i = 0;
    while (i < words.length && words[i] !== null && /^\w+=/.test(words[i]!)) i++;
    return [words.slice(i)];
  },
  sudo: afterOptions('', ''),
  doas: afterOptions('', ''),
  xargs: (args) => {
    const rest = afterOptions('0rtxp', 'nPLsIdEa', ['null', 'no-run-if-empty', 'verbose'])(args);
    if (rest === 'unknown') return rest;
    return rest[0]!.length > 0 ? rest : [['echo']];
  },
  find: (args) => {
    const inner: (readonly (string | null)[])[] = [];
    for (let i = 0; i < args.length; i++) {
      if (!['-exec', '-execdir', '-ok', '-okdir'].includes(args[i] ?? '')) continue;
      let end = i + 1;
      while (end < args.length && args[end] !== ';' && args[end] !== '+') end++;
      inner.push(args.slice(i + 1, end));
      i = end;
    }
    return inner;
  },
};
