#!/usr/bin/env node
import { USAGE, UsageError } from './usage.js';
import { versionLine } from './version.js';

// `tether <command> ...`: one entry point, one small module per command, loaded only when
// called (the runtime and the MCP SDK take a while to load; `--help` and `--version` need neither).
async function main(argv: readonly string[]): Promise<number> {
  const [command, ...rest] = argv;
  switch (command) {
    case 'demo':
      return (await import('./demo-command.js')).demoCommand(rest);
    case 'serve':
      return (await import('./demo-command.js')).demoCommand(rest, true);
    case 'view':
      return (await import('./view-command.js')).viewCommand(rest);
    case 'run':
      return (await import('./run-command.js')).runCommand(rest);
    case 'mcp':
      return (await import('./mcp-command.js')).mcpCommand(rest);
    case 'reap':
      return (await import('./reap-command.js')).reapCommand(rest);
    case undefined:
    case '-h':
    case '--help':
    case 'help':
      process.stdout.write(USAGE);
      return command === undefined ? 2 : 0;
    case '--version':
    case 'version':
      process.stdout.write(versionLine());
      return 0;
    default:
      throw new UsageError(
        command.startsWith('-')
          ? `unknown option '${command}'; a command comes first: run, mcp or demo`
          : `unknown command '${command}'; the commands are run, mcp, reap, demo, serve and view`,
      );
  }
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    if (err instanceof UsageError) {
      process.stderr.write(err.render());
      process.exitCode = 2;
      return;
    }
    process.stderr.write(`tether: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exitCode = 1;
  },
);
