/**
 * What a wrapper program runs (SPEC A6): the argv of each program it starts, `'unknown'` when
 * an option it takes is not known here. A string it hands a shell (`su -c '…'`) comes back as
 * `['sh', '-c', string]`, so it is judged like `sh -c`; a wrapper that starts a shell reading
 * its input (`unshare` with no program) comes back as `['sh']`.
 *
 * @example
 * ```ts
 * WRAPPERS.flock?.(['-n', '/tmp/lock', 'rm', 'w']); // [['rm', 'w']]
 * ```
 */
export type Unwrap = (args: readonly (string | null)[]) => (readonly (string | null)[])[] | 'unknown';

type Word = string | null;
interface Parsed {
  readonly options: readonly [string, Word][];
  readonly rest: readonly Word[];
}

/**
 * Getopt-style options: `short` lists letters, a letter followed by `:` takes a value;
 * `long` lists names, `name=` takes a value, `name?` takes one only as `--name=v`. Stops at the
 * first operand (wrappers use `+` getopt: what follows is the program's).
 *
 * @example
 * ```ts
 * getopt(['-w', '5', 'f', 'ls'], 'nw:', []); // { options: [['w', '5']], rest: ['f', 'ls'] }
 * ```
 */
export function getopt(args: readonly Word[], short: string, long: readonly string[]): Parsed | 'unknown' {
  const options: [string, Word][] = [];
  let i = 0;
  while (i < args.length) {
    const a = args[i];
    if (a === null || a === undefined) return 'unknown';
    if (a === '--') return { options, rest: args.slice(i + 1) };
    if (!a.startsWith('-') || a === '-') break;
    if (a.startsWith('--')) {
      const eq = a.indexOf('=');
      const name = a.slice(2, eq < 0 ? undefined : eq);
      if (long.includes(`${name}=`)) {
        options.push([name, eq < 0 ? (args[++i] ?? null) : a.slice(eq + 1)]);
      } else if (long.includes(name) || long.includes(`${name}?`)) {
        options.push([name, eq < 0 ? null : a.slice(eq + 1)]);
      } else return 'unknown';
      i++;
      continue;
    }
    for (let k = 1; k < a.length; k++) {
      const c = a[k]!;
      const at = short.indexOf(c);
      if (at < 0 || c === ':') return 'unknown';
      if (short[at + 1] === ':') {
        options.push([c, k + 1 < a.length ? a.slice(k + 1) : (args[++i] ?? null)]);
        break;
      }
      options.push([c, null]);
    }
    i++;
  }
  return { options, rest: args.slice(i) };
}

const has = (p: Parsed, ...names: string[]) => p.options.some(([n]) => names.includes(n));
const optionValue = (p: Parsed, ...names: string[]) => p.options.find(([n]) => names.includes(n))?.[1];

// A wrapper whose program follows its options (and `skip` operands of its own).
function plain(short: string, long: readonly string[] = [], skip = 0, shellWhenEmpty = false): Unwrap {
  return (args) => {
    const p = getopt(args, short, long);
    if (p === 'unknown') return p;
    const program = p.rest.slice(skip);
    if (program.length === 0) return shellWhenEmpty ? [['sh']] : [];
    return [program];
  };
}

// The namespace options unshare(1) and nsenter(1) share, each with an optional value.
const NAMESPACE_LONG = ['mount?', 'uts?', 'ipc?', 'net?', 'pid?', 'user?', 'cgroup?', 'time?'];

// The long options su(1) and runuser(1) share (runuser adds --user).
const SU_LONG = [
  'login',
  'preserve-environment',
  'pty',
  'fast',
  'shell=',
  'group=',
  'supp-group=',
  'whitelist-environment=',
  'command=',
  'session-command=',
];

// `su [-] [user] [-c cmd] [args]`, `runuser`: a string for the shell, or the shell with args.
function switchUser(short: string, long: readonly string[]): Unwrap {
  return (args) => {
    const p = getopt(args, short, long);
    if (p === 'unknown') return p;
    let rest = p.rest[0] === '-' ? p.rest.slice(1) : p.rest;
    if (has(p, 'u', 'user')) return rest.length === 0 ? [['sh']] : [rest]; // runuser -u USER CMD
    rest = rest.slice(1); // the user
    const command = optionValue(p, 'c', 'command', 'session-command');
    if (command !== undefined) return [['sh', '-c', command]];
    // `su user -c cmd`: options may follow the user (util-linux permutes them).
    const at = rest.findIndex((w) => w === '-c' || w === '--command');
    if (at >= 0) return [['sh', '-c', rest[at + 1] ?? null]];
    return [['sh', ...rest]];
  };
}

const SHELL_STRING = (command: Word | undefined): (readonly Word[])[] => [['sh', '-c', command ?? null]];

/**
 * The wrapper table (SPEC A6): for each known wrapper, where its program is. Programs not here
 * are judged themselves (and asked about when an argument names a denied program).
 *
 * @example
 * ```ts
 * WRAPPERS.taskset?.(['0x1', 'rm', 'w']); // [['rm', 'w']]
 * ```
 */
export const WRAPPERS: Readonly<Record<string, Unwrap>> = {
  command: plain('pvV'),
  builtin: (args) => [args],
  nohup: plain(''),
  time: plain('p'),
  nice: (args) => {
    const first = args[0];
    if (first !== null && first !== undefined && /^-\d+$/.test(first)) return [args.slice(1)];
    return plain('n:', ['adjustment='])(args);
  },
  stdbuf: plain('i:o:e:', ['input=', 'output=', 'error=']),
  timeout: plain('vs:k:', ['preserve-status', 'foreground', 'verbose', 'signal=', 'kill-after='], 1),
  env: (args) => {
    const p = getopt(args, 'i0u:C:', ['ignore-environment', 'null', 'unset=', 'chdir=']);
    if (p === 'unknown') return p;
    let i = 0;
    while (i < p.rest.length && p.rest[i] !== null && /^\w+=/.test(p.rest[i]!)) i++;
    return [p.rest.slice(i)];
  },
  sudo: plain(''), // any option (`-u root`) asks: which user and program are not judged here
  doas: plain(''),
  xargs: (args) => {
    const p = getopt(args, '0rtxpn:P:L:s:I:d:E:a:', ['null', 'no-run-if-empty', 'verbose']);
    if (p === 'unknown') return p;
    return p.rest.length > 0 ? [p.rest] : [['echo']];
  },
  find: (args) => {
    const inner: (readonly Word[])[] = [];
    for (let i = 0; i < args.length; i++) {
      if (!['-exec', '-execdir', '-ok', '-okdir'].includes(args[i] ?? '')) continue;
      let end = i + 1;
      while (end < args.length && args[end] !== ';' && args[end] !== '+') end++;
      inner.push(args.slice(i + 1, end));
      i = end;
    }
    return inner;
  },
  setsid: plain('cfw', ['ctty', 'fork', 'wait']),
  // flock [opts] FILE CMD… | flock [opts] FILE -c STRING | flock [opts] FD
  flock: (args) => {
    const p = getopt(args, 'sexunoFw:E:c:', [
      'shared',
      'exclusive',
      'unlock',
      'nonblock',
      'close',
      'no-fork',
      'verbose',
      'timeout=',
      'wait=',
      'conflict-exit-code=',
    ]);
    if (p === 'unknown') return p;
    const [, ...after] = p.rest;
    if (after[0] === '-c' || after[0] === '--command') return SHELL_STRING(after[1]);
    return after.length > 0 ? [after] : [];
  },
  ionice: (args) => {
    const p = getopt(args, 'tc:n:p:P:u:', ['ignore', 'class=', 'classdata=', 'pid=', 'pgid=', 'uid=']);
    if (p === 'unknown') return p;
    if (has(p, 'p', 'P', 'u', 'pid', 'pgid', 'uid')) return []; // acts on running processes
    return p.rest.length > 0 ? [p.rest] : [];
  },
  // taskset [opts] MASK CMD… | taskset -p [MASK] PID
  taskset: (args) => {
    const p = getopt(args, 'acp', ['all-tasks', 'cpu-list', 'pid']);
    if (p === 'unknown') return p;
    if (has(p, 'p', 'pid')) return [];
    return p.rest.length > 1 ? [p.rest.slice(1)] : [];
  },
  // chrt [opts] PRIO CMD… | chrt -p …
  chrt: (args) => {
    const p = getopt(args, 'abdefiomprRvT:P:D:', [
      'all-tasks',
      'batch',
      'deadline',
      'fifo',
      'idle',
      'other',
      'rr',
      'reset-on-fork',
      'verbose',
      'max',
      'pid',
      'sched-runtime=',
      'sched-period=',
      'sched-deadline=',
    ]);
    if (p === 'unknown') return p;
    if (has(p, 'p', 'pid', 'm', 'max')) return [];
    const first = p.rest[0];
    const skip = first !== null && first !== undefined && /^\d+$/.test(first) ? 1 : 0;
    return p.rest.length > skip ? [p.rest.slice(skip)] : [];
  },
  strace: (args) => {
    const p = getopt(args, 'cdDfFhiqrtTvVwxyzkCnZa:b:e:E:I:o:O:p:P:s:S:u:U:X:', []);
    if (p === 'unknown') return p;
    if (has(p, 'p')) return [];
    return p.rest.length > 0 ? [p.rest] : [];
  },
  ltrace: plain('bcCfhiLrStTVa:A:D:e:F:l:n:o:p:s:u:x:'),
  unshare: plain(
    'muinpUCTfrcS:G:R:w:',
    [
      ...NAMESPACE_LONG,
      'fork',
      'map-root-user',
      'map-current-user',
      'map-auto',
      'mount-proc?',
      'kill-child?',
      'propagation=',
      'setgroups=',
      'map-user=',
      'map-group=',
      'map-users=',
      'map-groups=',
      'keep-caps',
      'setuid=',
      'setgid=',
      'root=',
      'wd=',
      'monotonic=',
      'boottime=',
    ],
    0,
    true,
  ),
  nsenter: plain(
    'aFZmuinpUCTt:S:G:r:w:',
    [
      'all',
      'target=',
      ...NAMESPACE_LONG,
      'setuid=',
      'setgid=',
      'preserve-credentials',
      'root?',
      'wd?',
      'no-fork',
      'follow-context',
      'env',
    ],
    0,
    true,
  ),
  setpriv: plain('d', [
    'dump',
    'nnp',
    'no-new-privs',
    'clear-groups',
    'keep-groups',
    'init-groups',
    'reset-env',
    'ruid=',
    'euid=',
    'reuid=',
    'rgid=',
    'egid=',
    'regid=',
    'groups=',
    'inh-caps=',
    'ambient-caps=',
    'bounding-set=',
    'securebits=',
    'pdeathsig=',
    'selinux-label=',
    'apparmor-profile=',
    'landlock-access=',
    'landlock-rule=',
  ]),
  // script [opts] [file]: runs `-c STRING` through the shell, else an interactive shell.
  script: (args) => {
    const p = getopt(args, 'aeEfqhtc:O:I:B:T:m:', [
      'append',
      'return',
      'flush',
      'force',
      'quiet',
      'command=',
      'echo=',
      'log-out=',
      'log-in=',
      'log-io=',
      'log-timing=',
      'logging-format=',
      'output-limit=',
      'timing?',
    ]);
    if (p === 'unknown') return p;
    const command = optionValue(p, 'c', 'command');
    return command === undefined ? [['sh']] : SHELL_STRING(command);
  },
  su: switchUser('lmpPfs:g:G:w:c:', SU_LONG),
  runuser: switchUser('lmpPfs:g:G:w:c:u:', [...SU_LONG, 'user=']),
  sg: (args) => {
    const rest = args[1] === '-c' ? args.slice(2) : args.slice(1);
    return rest.length === 0 ? [['sh']] : SHELL_STRING(rest.some((w) => w === null) ? null : rest.join(' '));
  },
  chroot: plain('', ['userspec=', 'groups=', 'skip-chdir'], 1, true),
  prlimit: (args) => {
    // `--nofile=…`, `-n…`: every limit option carries its value after `=` or in the letter's word.
    const p = getopt(args, 'p:o:cdefilmnqrstuvxy', [
      'pid=',
      'output=',
      'noheadings',
      'raw',
      'verbose',
      ...['as', 'core', 'cpu', 'data', 'fsize', 'locks', 'memlock', 'msgqueue', 'nice', 'nofile'].map(
        (n) => `${n}?`,
      ),
      ...['nproc', 'rss', 'rtprio', 'rttime', 'sigpending', 'stack'].map((n) => `${n}?`),
    ]);
    if (p === 'unknown') return p;
    if (has(p, 'p', 'pid')) return [];
    return p.rest.length > 0 ? [p.rest] : [];
  },
  numactl: plain('asHlSC:N:m:i:p:P:b:', [
    'all',
    'localalloc',
    'show',
    'hardware',
    'interleave=',
    'membind=',
    'cpunodebind=',
    'physcpubind=',
    'preferred=',
    'preferred-many=',
    'balancing',
  ]),
  setarch: plain(
    'vRFLXBIST3',
    [
      'verbose',
      'addr-no-randomize',
      'fdpic-funcptrs',
      'mmap-page-zero',
      'addr-compat-layout',
      'read-implies-exec',
      '32bit',
      'short-inode',
      'whole-seconds',
      'sticky-timeouts',
      '3gb',
      'uname-2.6',
    ],
    1,
    true,
  ),
  watch: (args) => {
    const p = getopt(args, 'bcCdeghprtwxn:q:', [
      'beep',
      'color',
      'no-color',
      'errexit',
      'chgexit',
      'help',
      'precise',
      'no-rerun',
      'no-title',
      'no-wrap',
      'exec',
      'interval=',
      'differences?',
      'equexit=',
    ]);
    if (p === 'unknown') return p;
    if (has(p, 'x', 'exec')) return p.rest.length > 0 ? [p.rest] : [];
    return SHELL_STRING(p.rest.some((w) => w === null) ? null : p.rest.join(' '));
  },
  busybox: (args) => (args.length > 0 ? [args] : []),
  pkexec: plain('', ['user=', 'keep-cwd', 'disable-internal-agent']),
  fakeroot: plain('ui:s:l:b:', ['lib=', 'faked=']),
  faketime: plain('mf', ['exclude-monotonic', 'date-prog='], 1),
  catchsegv: plain(''),
  unbuffer: plain('p'),
  torsocks: plain('qdiau:p:P:', ['isolate', 'user=', 'pass=', 'address=', 'port=']),
  proxychains: plain('qf:'),
  proxychains4: plain('qf:'),
  'dbus-run-session': plain('', ['config-file=', 'dbus-daemon=']),
  'xvfb-run': plain('aeflfn:p:s:w:', ['auto-servernum', 'error-file=', 'server-args=', 'wait=']),
  cgexec: plain('g:', ['sticky']),
  valgrind: (args) => {
    // Every valgrind option is one word (`--tool=memcheck`, `-q`, `-v`).
    let i = 0;
    while (i < args.length && args[i] !== null && args[i]!.startsWith('-')) i++;
    if (i < args.length && args[i] === null) return 'unknown';
    return args.length > i ? [args.slice(i)] : [];
  },
};
