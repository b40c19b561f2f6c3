import { createRequire } from 'node:module';
import { parseArgs } from 'node:util';
import { serveMcpOverStdio } from '../adapters/mcp/mcp-stdio.js';
import { UsageError } from './usage.js';

/** `tether mcp --help`. */
export const MCP_USAGE = `Usage: tether mcp [options]

Serves Tether's tools (bash, job_*, terminal_*) to one Model Context Protocol client over stdio.
The client is one owner: when it disconnects, every job, terminal and process it started is
stopped and verified gone, then the server exits 0. Only protocol is written to stdout; logs go
to stderr. Background job completions are sent as notifications/message (level info, logger
"tether", data { event: "job_completed", text, job }) and noted in the next tool result; so is a
terminal whose shell exits on its own (data { event: "terminal_exited", text, terminal }).

Options:
  --persistent-bash        bash runs in one hidden persistent shell per client (cd and variables
                           carry over between calls) instead of a fresh shell per call
  --cwd <dir>              default working directory for commands (default: the current one)
  --output-budget <chars>  at most this many characters per tool result (default 30000)
  -h, --help               this text

Client configuration (e.g. Claude Desktop, Cursor):
  { "mcpServers": { "tether": { "command": "npx", "args": ["-y", "tether-runtime", "mcp"] } } }
`;

/**
 * `tether mcp [options]`: runs the MCP server on stdin/stdout until the client disconnects.
 *
 * @example
 * ```ts
 * process.exitCode = await mcpCommand(['--persistent-bash']);
 * ```
 */
export async function mcpCommand(args: readonly string[]): Promise<number> {
  const { values } = parseMcpArgs(args);
  if (values.help) {
    process.stdout.write(MCP_USAGE);
    return 0;
  }
  const budget = values['output-budget'];
  const outputBudgetChars = budget === undefined ? undefined : Number(budget);
  if (
    outputBudgetChars !== undefined &&
    !(Number.isSafeInteger(outputBudgetChars) && outputBudgetChars >= 2000)
  ) {
    throw new UsageError(`--output-budget takes an integer of at least 2000 characters, got '${budget}'`);
  }
  // stdout carries the protocol only: stray console output goes to stderr instead.
  const restore = routeConsoleToStderr();
  try {
    const { clean } = await serveMcpOverStdio({
      persistentBash: values['persistent-bash'] === true,
      version: packageVersion(),
      ...(values.cwd !== undefined ? { runtime: { cwd: values.cwd } } : {}),
      ...(outputBudgetChars !== undefined ? { outputBudgetChars } : {}),
    });
    return clean ? 0 : 1;
  } finally {
    restore();
  }
}

function parseMcpArgs(args: readonly string[]) {
  try {
    return parseArgs({
      args: [...args],
      allowPositionals: false,
      options: {
        'persistent-bash': { type: 'boolean' },
        cwd: { type: 'string' },
        'output-budget': { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
    });
  } catch (err) {
    throw new UsageError(err instanceof Error ? err.message : String(err));
  }
}

// console.log/info/debug write to stdout; while serving, they must not corrupt the protocol.
function routeConsoleToStderr(): () => void {
  const saved = { log: console.log, info: console.info, debug: console.debug };
  console.log = console.info = console.debug = console.error;
  return () => Object.assign(console, saved);
}

// The package's own version, found through its self-reference (works from src and dist).
function packageVersion(): string {
  try {
    const pkg = createRequire(import.meta.url)('tether-runtime/package.json') as { version?: unknown };
    return typeof pkg.version === 'string' ? pkg.version : '0.0.0';
  } catch {
    return '0.0.0';
  }
}
