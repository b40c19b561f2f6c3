/**
 * A mistake in how the CLI was called: printed with a pointer to the command's `--help`, exit
 * code 2. `command` is the subcommand (`run`, `mcp`, …), or undefined for `tether` itself.
 *
 * @example
 * ```ts
 * throw new UsageError("option '--timeout' needs a value, e.g. --timeout 5000", 'run');
 * // tether run: option '--timeout' needs a value, e.g. --timeout 5000
 * // Run 'tether run --help' for usage.
 * ```
 */
export class UsageError extends Error {
  override readonly name = 'UsageError';
  readonly command: string | undefined;

  constructor(message: string, command?: string) {
    super(message);
    this.command = command;
  }

  /** The two lines printed on stderr. */
  render(): string {
    const who = this.command === undefined ? 'tether' : `tether ${this.command}`;
    return `${who}: ${this.message}\nRun '${who} --help' for usage.\n`;
  }
}

export const USAGE = `tether: process execution for AI agents that never hangs, orphans or loses a byte.

Usage:
  tether run [options] [--] <command...>  run one shell command; its whole tree is killed on
                                          timeout or Ctrl-C
  tether mcp [options]                    serve the tools to an MCP client over stdio
  tether reap [options]                   kill what crashed runtimes left (trees, cgroups, spills)
  tether demo [--serve] [--log <file>]    watch two agents use jobs, a terminal and wake-ups
                                          (--serve: live in a browser, read-only)
  tether serve [options]                  the demo with its read-only web mirror
  tether view <file.jsonl>                replay a recorded log in the browser, offline
  tether --help | --version               this text | the version

Every command takes --help and --version. Run 'tether <command> --help' for its options.
`;

export const RUN_USAGE = `Usage: tether run [options] [--] <command...>

Runs <command...> (joined with spaces) with /bin/bash -c through a Tether runtime, like a plain
shell would: its stdout and stderr go straight to yours, live and every byte, and its exit code
is tether's. Unlike a plain shell, the whole process tree (background children, setsid escapees)
is killed on timeout or Ctrl-C and anything left behind when the command ends is swept.
Options end at the first word that is not one, or at '--' (needed when the command starts
with '-'). stdin is closed (/dev/null) and pagers are off (PAGER=cat). The environment is
sanitized as for every Tether command: variables that look like secrets (names with KEY,
TOKEN, SECRET, PASSWORD, AUTH, ...; values shaped like keys) and TETHER_* are removed.

Options:
  --timeout <ms>    kill the command's whole tree after <ms> milliseconds
  --cwd <dir>       working directory (default: the current one)
  --shell <path>    shell used with -c (default: /bin/bash)
  --sandbox <mode>  off (default), read-only or workspace-write (bubblewrap)
  --quiet           do not print tether's one line of facts (exit, duration, …) on stderr
  --json            capture the output instead of streaming it, and print the whole result as
                    JSON on stdout (output tail, exitCode, timedOut, spillPath, …)
  -h, --help        this text
  --version         the version

Exit status: the command's exit code; 124 on timeout; 130 on Ctrl-C (SIGINT), 143 on SIGTERM,
129 on SIGHUP (the tree is killed first; also when the signal reached the whole process group,
as a terminal's ^C or timeout's does); 128+N when the command was killed by signal N; 1 when it
could not be started or its exit status was lost; 2 on a usage mistake.
`;

export const DEMO_USAGE = `Usage: tether demo [--serve] [--log <file>] [--inspect <file>]

Two agents with scripted drivers show the runtime's guarantees on a live timeline:
background jobs that succeed, fail and are killed; a terminal question answered once the
program is proven to wait on stdin; a completion that wakes an idle agent; and a teardown
that reports verified quiescence (no process, timer, turn or worker left).

Options:
  --log <file>      write the fact stream to <file> as JSONL (docs/FACTS.md); replay it with
                    'tether view <file>'. A relative <file> is relative to the current
                    directory; its absolute path is printed before and after the run
  --inspect <file>  the same log plus every XState inspection event under stable actor ids
                    (job:<id>, terminal:<id>, agent:<session>); same path rules as --log
  --serve           also serve the read-only web mirror and print its URL (one-time code);
                    after the script, the agents keep working at a human pace (a request
                    every few seconds: jobs that succeed, fail and are killed, a terminal)
                    until Ctrl-C, which stops everything to verified quiescence
  --port <n>        the mirror's port (default: any free one)
  --host <addr>     the mirror's address (default 127.0.0.1: this machine only)
  -h, --help        this text
  --version         the version

The agents' commands get your environment without secrets (names with KEY, TOKEN, SECRET,
PASSWORD, AUTH, ...) and TETHER_*, plus TERM=dumb PAGER=cat GIT_PAGER=cat NO_COLOR=1 (shell
commands and jobs) or TERM=xterm-256color PAGER=cat GIT_PAGER=cat (terminals). Tether sets no
EDITOR, VISUAL or COLOR: an EDITOR=vi or COLOR=0 a child sees came from your environment.

Exit status: 0 when the teardown was verified quiescent, 1 otherwise.
`;

export const REAP_USAGE = `Usage: tether reap [options]

Finds the runtimes recorded in the state directory whose process is dead (killed, crashed,
OOM-killed without dispose) and kills everything they left to verified quiescence: their
process trees (their cgroups, or every process carrying their marker and everything in those
processes' sessions and groups or below them), their spill files, cgroups and spawner FIFOs,
and the containers they placed owners in (podman or docker on the PATH, found by the
tether.runtime label and the runtime's pid and start time, removed with rm -f). A runtime whose
process still lives is never touched. Only a state directory and records of this
user that nobody else can write are believed, and only the cgroup and spill directory a record
names for its own runtime (tether-<runtime id>) are removed: anything else is refused, and
nothing is done.

Options:
  --state-dir <dir>  the runtimes' state directory (default: <tmpdir>/tether-state-<uid>)
  --grace <ms>       between SIGTERM and SIGKILL (default: 2000)
  --name <name>      instead: end persisted runtime <name>'s helper (createRuntime({ persist }))
                     and kill every tree under it, adopted or not (docs/persist.md)
  --json             print what was reaped as JSON
  -h, --help         this text

Exit status: 0 when everything was verified dead (or nothing was left); 1 when a process could
not be killed or not be proven another's (marker mode: an orphan without a marker), or the state
directory was refused; 2 on a usage error.
`;

export const SERVE_USAGE = `Usage: tether serve [--port <n>] [--host <addr>] [--log <file>]

Runs the demo (tether demo --help) around a runtime with its read-only web mirror: agents
with their phase and wake budget, every owner's jobs (state, exit code, duration, output
tail), terminals (their screen), notices and kill verdicts, and every state machine drawn
with each live actor's state marked. Open the printed URL once: its code becomes a session
cookie. Nothing on the page can change the runtime. After the script the agents keep
working, a request every few seconds, so the page keeps changing; Ctrl-C stops everything to
verified quiescence and exits (0 when verified).

Options:
  --port <n>        port (default: any free one)
  --host <addr>     address to bind (default 127.0.0.1: this machine only)
  --log <file>      also write the facts to <file> as JSONL
  --inspect <file>  the same log plus the XState inspection events
  -h, --help        this text
  --version         the version
`;

export const VIEW_USAGE = `Usage: tether view [--port <n>] [--host <addr>] <file.jsonl>

Serves the mirror's page over a recorded fact log (tether demo --log, createRuntime({ log })):
a timeline to scrub or play, the state of every agent, job and terminal at that moment, and
the machine diagrams. Everything in a log is history: nothing is shown as controllable.
Needs no network. Open the printed URL once; Ctrl-C stops it.

Options:
  --port <n>        port (default: any free one)
  --host <addr>     address to bind (default 127.0.0.1)
  -h, --help        this text
  --version         the version
`;
