import { parseArgs } from 'node:util';
import { UsageError } from './usage.js';

/** One option of a command: a string takes a value (`example` shows one), a boolean does not. */
export type OptionSpec =
  | { readonly type: 'string'; readonly example: string }
  | { readonly type: 'boolean'; readonly short?: string };

/** The values parsed for a table of options: a string option's value, or `true` for a flag. */
export type OptionValues<O extends Readonly<Record<string, OptionSpec>>> = {
  readonly [K in keyof O]?: O[K] extends { readonly type: 'string' } ? string : true;
} & { readonly help?: true; readonly version?: true };

/** What a command accepts besides options: nothing, or the rest of the line (a command to run). */
export type Positionals = 'none' | 'rest';

const COMMON: Readonly<Record<string, OptionSpec>> = {
  help: { type: 'boolean', short: 'h' },
  version: { type: 'boolean' },
};

/**
 * Parses `args` of `tether <command>` against `options` (plus `--help`/`-h` and `--version`,
 * which every command takes). With `'rest'`, options end at `--` or at the first word that is
 * not an option (as `env` and `timeout` do), and everything from there is the command line.
 * Mistakes throw a {@link UsageError} in our own words that points at `tether <command> --help`.
 * `node:util` parseArgs does the tokenizing; the checks are ours because its strict-mode
 * messages speak of its own API ("To specify a positional argument starting with a '-' …").
 *
 * @example
 * ```ts
 * const { values, positionals } = parseCommandArgs('run', ['--timeout', '500', 'sleep', '9'],
 *   { timeout: { type: 'string', example: '5000' } }, 'rest');
 * // values.timeout === '500', positionals: ['sleep', '9']
 * ```
 */
export function parseCommandArgs<O extends Readonly<Record<string, OptionSpec>>>(
  command: string,
  args: readonly string[],
  options: O,
  positionals: Positionals,
): { values: OptionValues<O>; positionals: string[] } {
  const table: Readonly<Record<string, OptionSpec>> = { ...options, ...COMMON };
  const { tokens } = parseArgs({
    args: [...args],
    options: toParseArgsOptions(table),
    strict: false,
    allowPositionals: true,
    tokens: true,
  });
  const values: Record<string, string | true> = {};
  const problems: string[] = [];
  let rest: string[] = [];
  for (const token of tokens) {
    if (token.kind === 'option-terminator' || token.kind === 'positional') {
      if (positionals === 'rest') {
        rest = args.slice(token.kind === 'positional' ? token.index : token.index + 1);
        break;
      }
      if (token.kind === 'positional') problems.push(`unexpected argument '${token.value}'`);
      continue;
    }
    const spec = table[token.name];
    const problem = optionProblem(token, spec);
    if (problem !== null) problems.push(problem);
    else values[token.name] = spec?.type === 'string' ? (token.value ?? '') : true;
  }
  // `--help` and `--version` answer even when something else on the line is wrong.
  if (problems.length > 0 && !values.help && !values.version) {
    throw new UsageError(problems[0]!, command);
  }
  return { values: values as OptionValues<O>, positionals: rest };
}

type OptionToken = {
  readonly rawName: string;
  readonly value?: string | undefined;
  readonly inlineValue?: boolean | undefined;
};

function optionProblem(token: OptionToken, spec: OptionSpec | undefined): string | null {
  const { rawName, value, inlineValue } = token;
  if (spec === undefined) return `unknown option '${rawName}'`;
  if (spec.type === 'boolean') return value === undefined ? null : `option '${rawName}' takes no value`;
  // A string option followed by another option almost always means its value was forgotten.
  if (value === undefined || (!inlineValue && value.startsWith('-'))) {
    return `option '${rawName}' needs a value, e.g. ${rawName} ${spec.example}`;
  }
  return null;
}

function toParseArgsOptions(table: Readonly<Record<string, OptionSpec>>) {
  return Object.fromEntries(
    Object.entries(table).map(([name, spec]) => [
      name,
      spec.type === 'boolean' && spec.short !== undefined
        ? { type: spec.type, short: spec.short }
        : { type: spec.type },
    ]),
  );
}
