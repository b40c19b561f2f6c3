import { createRequire } from 'node:module';
import type { Node } from 'web-tree-sitter';
import { commandTargets } from './command-targets.js';
import { nodeEvaluations } from './evaluated-nodes.js';
import { type Evaluated, type Evaluation, evaluatedWords, subscriptOf } from './evaluated-words.js';
import type { SimpleCommand } from './policy-types.js';
import { staticWord } from './shell-words.js';

/**
 * A command line as bash would read it (SPEC A2): every simple command in it (lists,
 * pipelines, subshells, compound commands, substitutions, redirection targets), and why no
 * rule may allow it, when something in it is only known at run time.
 *
 * @example
 * ```ts
 * const parser = await loadShellParser();
 * parser.parse('git status && rm -rf $(pwd)');
 * // { commands: [git status, rm -rf null, pwd], undecidable: ['command substitution $(…)'] }
 * ```
 */
export interface ParsedLine {
  readonly commands: readonly SimpleCommand[];
  readonly undecidable: readonly string[];
}

/**
 * A loaded bash parser: tree-sitter-bash, the grammar Gemini CLI and Codex judge commands
 * with, as WASM (no native build). `parse` is synchronous and cheap (well under 1 ms a line).
 *
 * @example
 * ```ts
 * const { commands } = (await loadShellParser()).parse('ls | wc -l');
 * ```
 */
export interface ShellParser {
  parse(line: string): ParsedLine;
}

const ARITHMETIC_TEST = new Set(['-eq', '-ne', '-lt', '-le', '-gt', '-ge']);
/** How deep evaluated words are parsed again (a trap that sets a trap that …); deeper asks. */
const MAX_DEPTH = 4;
const ARITHMETIC_ON_VARIABLES = 'arithmetic on variables (bash may run what they hold)';

let loading: Promise<ShellParser> | null = null;

/**
 * Loads the parser once per process (about 100 ms the first time: two WASM modules); later
 * calls get the same one.
 *
 * @example
 * ```ts
 * const parser = await loadShellParser();
 * ```
 */
export function loadShellParser(): Promise<ShellParser> {
  loading ??= (async () => {
    const { Parser, Language } = await import('web-tree-sitter');
    await Parser.init();
    const wasm = createRequire(import.meta.url).resolve('tree-sitter-bash/tree-sitter-bash.wasm');
    const parser = new Parser();
    parser.setLanguage(await Language.load(wasm));
    return { parse: (line: string) => parseWith(parser, line) };
  })();
  loading.catch(() => {
    loading = null; // a failed load may be retried by the next decision
  });
  return loading;
}

type TreeParser = { parse(text: string): { rootNode: Node; delete(): void } | null };

function parseWith(parser: TreeParser, line: string, depth = 0, via?: string): ParsedLine {
  const tree = parser.parse(line);
  if (tree === null) return { commands: [], undecidable: ['the line could not be parsed'] };
  try {
    const found: Found = { commands: [], undecidable: new Set<string>(), parser, depth, via };
    // Any syntax error anywhere (bash would refuse the line, or read it differently).
    if (tree.rootNode.hasError) found.undecidable.add('the line is not valid bash');
    walk(tree.rootNode, found, []);
    return { commands: found.commands, undecidable: [...found.undecidable] };
  } finally {
    tree.delete(); // WASM memory is not garbage-collected
  }
}

interface Found {
  readonly commands: SimpleCommand[];
  readonly undecidable: Set<string>;
  readonly parser: TreeParser;
  /** How many evaluations deep this text is (0: the line as written). */
  readonly depth: number;
  /** The evaluated word of the line this text came from. */
  readonly via: string | undefined;
}

// Visits every node once; commands are collected, run-time shapes are named, and every word
// bash evaluates later or elsewhere is parsed again as what bash will read it as (SPEC A6).
function walk(node: Node, found: Found, redirects: readonly string[]): void {
  if (node.isError || node.isMissing) found.undecidable.add('the line is not valid bash');
  switch (node.type) {
    case 'command':
    case 'declaration_command':
    case 'unset_command': {
      const command =
        node.type === 'command'
          ? simpleCommand(node, redirects, found)
          : wordsCommand(node, redirects, found);
      found.commands.push(command);
      // What the command and every program its wrappers start evaluate (`sudo printf -v …`).
      for (const target of commandTargets(command.argv).targets) absorb(found, evaluatedWords(target.argv));
      break;
    }
    case 'redirected_statement': {
      const targets = node.childrenForFieldName('redirect').map(redirectTarget);
      const body = node.childForFieldName('body');
      for (const child of node.namedChildren) {
        if (child) walk(child, found, body !== null && child.equals(body) ? targets : []);
      }
      return;
    }
    case 'command_substitution':
      found.undecidable.add(node.text.startsWith('`') ? 'backticks `…`' : 'command substitution $(…)');
      break;
    case 'process_substitution':
      found.undecidable.add('process substitution <(…) / >(…)');
      break;
    case 'function_definition':
      found.undecidable.add('a function definition');
      break;
    case 'arithmetic_expansion':
    case 'c_style_for_statement':
    case 'subscript':
      if (hasVariable(node)) found.undecidable.add(ARITHMETIC_ON_VARIABLES);
      break;
    case 'compound_statement':
      if (node.text.startsWith('((') && hasVariable(node)) found.undecidable.add(ARITHMETIC_ON_VARIABLES);
      break;
    case 'test_command':
      if (hasArithmeticTest(node) && hasVariable(node)) found.undecidable.add(ARITHMETIC_ON_VARIABLES);
      break;
  }
  absorb(found, nodeEvaluations(node));
  for (const child of node.namedChildren) if (child) walk(child, found, []);
}

function absorb(found: Found, evaluated: Evaluated): void {
  for (const problem of evaluated.problems) found.undecidable.add(problem);
  for (const evaluation of evaluated.evaluations) evaluate(found, evaluation);
}

// Parses a word bash evaluates as what bash reads it as; what cannot be read asks (SPEC A6).
function evaluate(found: Found, e: Evaluation): void {
  const ask = (why: string) => {
    found.undecidable.add(why);
  };
  if (e.text === null) {
    ask(`${e.what}, which bash evaluates, is only known at run time`);
    return;
  }
  if (e.kind === 'name') {
    const subscript = subscriptOf(e.text);
    if (subscript === null) ask(`${e.what} is not a plain variable name: bash expands it`);
    else if (subscript !== '')
      evaluate(found, { kind: 'arith', text: subscript, what: `${e.what}, whose subscript bash evaluates` });
    return;
  }
  if (e.text.trim() === '') return;
  if (found.depth >= MAX_DEPTH) {
    ask(`${e.what} nests evaluation too deeply to judge`);
    return;
  }
  const source =
    e.kind === 'code'
      ? e.text
      : e.kind === 'arith'
        ? `(( ${e.text} ))`
        : e.kind === 'prompt' // prompt escapes (`\u`) dropped: what is left expands like "…"
          ? `_="${e.text.replaceAll('\\', '').replaceAll('"', '\\"')}"`
          : `_=(${e.text})`;
  const inner = parseWith(found.parser, source, found.depth + 1, found.via ?? e.what);
  found.commands.push(...inner.commands);
  for (const why of inner.undecidable) ask(`${e.what}: ${why}`);
}

function simpleCommand(node: Node, redirects: readonly string[], found: Found): SimpleCommand {
  const name = node.childForFieldName('name');
  const args = node.childrenForFieldName('argument');
  const argv = [name ? staticWord(name) : null, ...args.map(staticWord)];
  return withVia({ argv, text: node.text, redirects }, found);
}

// `export A=1`, `declare -f`, `unset X`: the keyword and its words as argv.
function wordsCommand(node: Node, redirects: readonly string[], found: Found): SimpleCommand {
  const keyword = node.firstChild?.text ?? node.type;
  const words = node.namedChildren.filter((c): c is Node => c !== null && c.type !== 'variable_assignment');
  const argv = [keyword, ...words.map((w) => (w.type === 'variable_name' ? w.text : staticWord(w)))];
  return withVia({ argv, text: node.text, redirects }, found);
}

function withVia(command: SimpleCommand, found: Found): SimpleCommand {
  return found.via === undefined ? command : { ...command, via: found.via };
}

function redirectTarget(node: Node): string {
  const destination = node.childForFieldName('destination');
  return destination ? destination.text : node.text;
}

function hasVariable(node: Node): boolean {
  if (['variable_name', 'simple_expansion', 'expansion', 'word'].includes(node.type)) return true;
  return node.namedChildren.some((child) => child !== null && hasVariable(child));
}

function hasArithmeticTest(node: Node): boolean {
  if (node.type === 'test_operator' && ARITHMETIC_TEST.has(node.text)) return true;
  return node.namedChildren.some((child) => child !== null && hasArithmeticTest(child));
}
