import { createRequire } from 'node:module';
import type { Node } from 'web-tree-sitter';
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

// A variable whose value decides which program runs, or runs code of its own.
const RUNS_CODE =
  /^(PATH|IFS|ENV|BASH_ENV|SHELLOPTS|BASHOPTS|PS4|PROMPT_COMMAND|CDPATH|GLOBIGNORE|NODE_OPTIONS|PYTHONSTARTUP|PERL5OPT|BASH_LOADABLES_PATH|LD_\w*|DYLD_\w*|BASH_FUNC_\w*|GIT_\w*|\w*_COMMAND)$/;
const ARITHMETIC_TEST = new Set(['-eq', '-ne', '-lt', '-le', '-gt', '-ge']);

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

function parseWith(parser: { parse(text: string): { rootNode: Node; delete(): void } | null }, line: string) {
  const tree = parser.parse(line);
  if (tree === null) return { commands: [], undecidable: ['the line could not be parsed'] };
  try {
    const found = { commands: [] as SimpleCommand[], undecidable: new Set<string>() };
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
}

// Visits every node once; commands are collected, run-time shapes are named.
function walk(node: Node, found: Found, redirects: readonly string[]): void {
  if (node.isError || node.isMissing) found.undecidable.add('the line is not valid bash');
  switch (node.type) {
    case 'command':
      found.commands.push(simpleCommand(node, redirects));
      break;
    case 'declaration_command':
    case 'unset_command':
      found.commands.push(wordsCommand(node, redirects));
      break;
    case 'redirected_statement': {
      const targets = node.childrenForFieldName('redirect').map(redirectTarget);
      const body = node.childForFieldName('body');
      for (const child of node.namedChildren) {
        if (child) walk(child, found, body !== null && child.equals(body) ? targets : []);
      }
      return;
    }
    case 'variable_assignment': {
      const name = node.childForFieldName('name')?.text ?? '';
      if (RUNS_CODE.test(name)) found.undecidable.add(`an assignment to ${name}, which changes what runs`);
      break;
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
      if (hasVariable(node)) found.undecidable.add('arithmetic on variables (bash may run what they hold)');
      break;
    case 'compound_statement':
      if (node.text.startsWith('((') && hasVariable(node)) {
        found.undecidable.add('arithmetic on variables (bash may run what they hold)');
      }
      break;
    case 'test_command':
      if (hasArithmeticTest(node) && hasVariable(node)) {
        found.undecidable.add('arithmetic on variables (bash may run what they hold)');
      }
      break;
  }
  for (const child of node.namedChildren) if (child) walk(child, found, []);
}

function simpleCommand(node: Node, redirects: readonly string[]): SimpleCommand {
  const name = node.childForFieldName('name');
  const args = node.childrenForFieldName('argument');
  const argv = [name ? staticWord(name) : null, ...args.map(staticWord)];
  return { argv, text: node.text, redirects };
}

// `export A=1`, `declare -f`, `unset X`: the keyword and its words as argv.
function wordsCommand(node: Node, redirects: readonly string[]): SimpleCommand {
  const keyword = node.firstChild?.text ?? node.type;
  const words = node.namedChildren.filter((c): c is Node => c !== null && c.type !== 'variable_assignment');
  return { argv: [keyword, ...words.map(staticWord)], text: node.text, redirects };
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
