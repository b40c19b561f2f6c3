#!/usr/bin/env node
import { demoCommand } from './demo-command.js';
import { mcpCommand } from './mcp-command.js';
import { reapCommand } from './reap-command.js';
import { runCommand } from './run-command.js';
import { USAGE, UsageError } from './usage.js';

// `tether <command> ...`: one entry point, one small module per command.
async function main(argv: readonly string[]): Promise<number> {
  const [command, ...rest] = argv;
  switch (command) {
    case 'demo':
      return demoCommand(rest);
    case 'run':
      return runCommand(rest);
    case 'mcp':
      return mcpCommand(rest);
    case 'reap':
      return reapCommand(rest);
    case undefined:
    case '-h':
    case '--help':
    case 'help':
      process.stdout.write(USAGE);
      return command === undefined ? 2 : 0;
    default:
      throw new UsageError(`unknown command '${command}'`);
  }
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    if (err instanceof UsageError) {
      process.stderr.write(`tether: ${err.message}\nRun 'tether --help' for usage.\n`);
      process.exitCode = 2;
      return;
    }
    process.stderr.write(`tether: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exitCode = 1;
  },
);
