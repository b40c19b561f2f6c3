import { serveMcpOverStdio } from '../adapters/mcp/mcp-stdio.js';
import type { MirrorOptions } from '../mirror/mirror-types.js';
import { MIN_OUTPUT_BUDGET_CHARS } from '../tools/tool-registry.js';
import { parseCommandArgs } from './cli-args.js';
import { refuseOverStdio } from './mcp-refusal.js';
import { mirrorAddress } from './mirror-cli.js';
import { approveFlag, sandboxFlag } from './sandbox-flag.js';
import { UsageError } from './usage.js';
import { packageVersion, versionLine } from './version.js';

/** `tether mcp --help`. */
export const MCP_USAGE = `Usage: tether mcp [options]

Serves Tether's tools (bash, job_*, terminal_*) to one Model Context Protocol client over stdio.
The client is one owner: when it disconnects, every job, terminal and process it started is
stopped and verified gone, then the server exits 0. That holds when the client dies too (killed,
its stderr pipe broken): a log line that cannot be written is dropped, it never ends the server. Only protocol is written to stdout; logs go
to stderr. Background job completions are sent as notifications/message (level info, logger
"tether", data { event: "job_completed", text, job }) and noted in the next tool result; so is a
terminal whose shell exits on its own (data { event: "terminal_exited", text, terminal }).

Options:
  --persistent-bash        bash runs in one hidden persistent shell per client (cd and variables
                           carry over between calls) instead of a fresh shell per call
  --cwd <dir>              default working directory for commands (default: the current one)
  --output-budget <chars>  at most this many characters per tool result: an integer of at
                           least ${MIN_OUTPUT_BUDGET_CHARS} (default 30000)
  --sandbox <mode>         where commands run: off (default), read-only or workspace-write
                           (bubblewrap; fails at start where this machine cannot provide it)
  --approve <mode>         who answers approval requests (commands rules cannot judge, such as
                           $(...), eval or bash -c, and escalations outside the sandbox):
                           elicit (ask the client's user via MCP elicitation; a client without
                           it gets a denial saying so), allow, or deny. Default: no policy
                           (every command runs; escalations are denied)
  --serve                  also serve the read-only web mirror of this server's runtime (its
                           jobs, terminals and diagrams, live); the URL is printed on stderr
  --port <n>, --host <a>   the mirror's port (default: any free one) and address (127.0.0.1)
  -h, --help               this text
  --version                the version

A flag mistake is printed on stderr, answered to the client as the error of its first request
(so it shows the reason rather than "Connection closed"), and the server exits 2.

Client configuration (e.g. Claude Desktop, Cursor). tether-runtime is not on npm yet: in a
clone, 'npm ci && npm run build && npm pack' makes tether-runtime-<version>.tgz; then
  { "mcpServers": { "tether": { "command": "npx",
      "args": ["-y", "--package=/absolute/path/to/tether-runtime-<version>.tgz", "tether", "mcp"] } } }
or, without packing: "command": "node", "args": ["/path/to/clone/dist/src/cli/main.js", "mcp"].
`;

const OPTIONS = {
  'persistent-bash': { type: 'boolean' },
  cwd: { type: 'string', example: '/path/to/project' },
  'output-budget': { type: 'string', example: '30000' },
  sandbox: { type: 'string', example: 'workspace-write' },
  approve: { type: 'string', example: 'elicit' },
  serve: { type: 'boolean' },
  port: { type: 'string', example: '7077' },
  host: { type: 'string', example: '127.0.0.1' },
} as const;

/**
 * `tether mcp [options]`: runs the MCP server on stdin/stdout until the client disconnects.
 * A flag mistake exits 2; when a client launched us (stdin is not a terminal), it is first
 * answered to the client, which would otherwise only see the connection close.
 *
 * @example
 * ```ts
 * process.exitCode = await mcpCommand(['--persistent-bash']);
 * ```
 */
export async function mcpCommand(args: readonly string[]): Promise<number> {
  let flags: McpFlags;
  try {
    flags = parseMcpFlags(args);
  } catch (err) {
    if (!(err instanceof UsageError) || process.stdin.isTTY) throw err;
    process.stderr.write(err.render());
    await refuseOverStdio(
      `tether mcp could not start: ${err.message}. Fix the server's args in the client's configuration ` +
        `('tether mcp --help' lists the flags).`,
    );
    return 2;
  }
  if (flags.help || flags.version) {
    process.stdout.write(flags.help ? MCP_USAGE : versionLine());
    return 0;
  }
  // stdout carries the protocol only: stray console output goes to stderr instead.
  const restore = routeConsoleToStderr();
  try {
    const { clean } = await serveMcpOverStdio({
      persistentBash: flags.persistentBash,
      version: packageVersion(),
      runtime: { ...(flags.cwd !== undefined ? { cwd: flags.cwd } : {}), ...flags.sandbox },
      ...flags.approve,
      ...(flags.mirror ? { mirror: flags.mirror } : {}),
      ...(flags.outputBudgetChars !== undefined ? { outputBudgetChars: flags.outputBudgetChars } : {}),
    });
    return clean ? 0 : 1;
  } finally {
    restore();
  }
}

interface McpFlags {
  readonly help: boolean;
  readonly version: boolean;
  readonly persistentBash: boolean;
  readonly cwd: string | undefined;
  readonly outputBudgetChars: number | undefined;
  readonly sandbox: ReturnType<typeof sandboxFlag>;
  readonly approve: ReturnType<typeof approveFlag>;
  /** V2: `--serve` (with `--port`, `--host`): the read-only web mirror beside the server. */
  readonly mirror: MirrorOptions | null;
}

function parseMcpFlags(args: readonly string[]): McpFlags {
  const { values } = parseCommandArgs('mcp', args, OPTIONS, 'none');
  const help = values.help === true;
  const version = values.version === true;
  const budget = values['output-budget'];
  const outputBudgetChars = budget === undefined ? undefined : Number(budget);
  if (
    !help &&
    !version &&
    outputBudgetChars !== undefined &&
    !(Number.isSafeInteger(outputBudgetChars) && outputBudgetChars >= MIN_OUTPUT_BUDGET_CHARS)
  ) {
    throw new UsageError(
      `--output-budget takes an integer of at least ${MIN_OUTPUT_BUDGET_CHARS} characters, got '${budget}'`,
      'mcp',
    );
  }
  return {
    help,
    version,
    persistentBash: values['persistent-bash'] === true,
    cwd: values.cwd,
    outputBudgetChars,
    sandbox: sandboxFlag(values.sandbox, 'mcp'),
    approve: approveFlag(values.approve),
    mirror: values.serve === true ? mirrorAddress(values, 'mcp') : null,
  };
}

// console.log/info/debug write to stdout; while serving, they must not corrupt the protocol.
function routeConsoleToStderr(): () => void {
  const saved = { log: console.log, info: console.info, debug: console.debug };
  console.log = console.info = console.debug = console.error;
  return () => Object.assign(console, saved);
}
