/** A mistake in how the CLI was called: printed with a pointer to --help, exit code 2. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}

export const USAGE = `tether: process execution for AI agents that never hangs, orphans or loses a byte.

Usage:
  tether demo [--inspect <file>]         watch two agents use jobs, a terminal and wake-ups
  tether run [options] -- <command...>   run one shell command through the runtime
  tether mcp [options]                   serve the tools to an MCP client over stdio
  tether --help                          this text

Run 'tether <command> --help' for a command's options.
`;

export const RUN_USAGE = `Usage: tether run [options] -- <command...>

Runs <command...> (joined with spaces) with /bin/bash -c through a Tether runtime: the whole
process tree is killed on timeout or Ctrl-C, leftovers are swept, and long output keeps its tail
with the full output spilled to a file.

Options:
  --timeout <ms>    kill the command's whole tree after <ms> milliseconds
  --cwd <dir>       working directory (default: the current one)
  --shell <path>    shell used with -c (default: /bin/bash)
  --sandbox <mode>  off (default), read-only or workspace-write (bubblewrap)
  --json            print the whole result as JSON instead of the output
  -h, --help        this text

Exit status: the command's exit code; 124 on timeout; 130 when cancelled; 128+N when killed by signal N.
`;

export const DEMO_USAGE = `Usage: tether demo [--inspect <file>]

Two agents with scripted drivers show the runtime's guarantees on a live timeline:
background jobs that succeed, fail and are killed; a terminal question answered once the
program is proven to wait on stdin; a completion that wakes an idle agent; and a teardown
that reports verified quiescence (no process, timer, turn or worker left).

Options:
  --inspect <file>  write every XState inspection event to <file>, one JSON object per line
                    (offline: Stately's web inspector needs a network)
  -h, --help        this text

Exit status: 0 when the teardown was verified quiescent, 1 otherwise.
`;
