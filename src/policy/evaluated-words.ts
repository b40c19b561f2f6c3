/**
 * A word bash evaluates later or elsewhere (SPEC A6): as a command line (`trap`, `complete -C`,
 * `PROMPT_COMMAND`), as arithmetic (`let`, subscripts, `${x:off}`), as a prompt (`PS1`), as a
 * word list (`compgen -W`), or as a variable name whose subscript is arithmetic (`test -v`,
 * `printf -v`, `read`). `text` is `null` when the word is only known at run time.
 *
 * @example
 * ```ts
 * const e: Evaluation = { kind: 'arith', text: 'a[$(rm w)]', what: "the word 'a[$(rm w)]' of `let`" };
 * ```
 */
export interface Evaluation {
  readonly kind: 'code' | 'arith' | 'prompt' | 'words' | 'name';
  readonly text: string | null;
  readonly what: string;
}

/** What one simple command makes bash evaluate, and why no rule may allow it. */
export interface Evaluated {
  readonly evaluations: Evaluation[];
  readonly problems: string[];
}

// Variables whose value bash reads as code or as a prompt it expands before every command.
const PROMPT = /^PS[0-4]$/;
// Variables that change which program a command name runs.
const LOOKUP = /^(PATH|BASH_CMDS|BASH_ALIASES|EXECIGNORE|BASH_LOADABLES_PATH)$/;
// Variables whose value decides what runs in a child or how the shell reads words.
const RUNS_CODE =
  /^(IFS|ENV|BASH_ENV|SHELLOPTS|BASHOPTS|CDPATH|GLOBIGNORE|NODE_OPTIONS|PYTHONSTARTUP|PERL5OPT|LD_\w*|DYLD_\w*|BASH_FUNC_\w*|GIT_\w*|\w*_COMMAND)$/;
const NAME = /^([A-Za-z_]\w*)(?:\[([\s\S]*)\])?$/;
const SHELLS = new Set(['sh', 'bash', 'dash', 'zsh', 'ksh', 'mksh', 'ash']);
const DECLARES = new Set(['declare', 'typeset', 'local', 'export', 'readonly']);
// A value that holds a subscript with an expansion: bash runs it if the variable is an integer.
const SUBSCRIPT_CODE = /\[[\s\S]*[$`]|[$`][\s\S]*\]/;

/**
 * Why writing variable `name` changes what runs, or `null` when it does not.
 *
 * @example
 * ```ts
 * lookupChange('BASH_CMDS'); // 'an assignment to BASH_CMDS, which changes how bash looks up command names'
 * ```
 */
export function lookupChange(name: string): string | null {
  if (LOOKUP.test(name)) return `an assignment to ${name}, which changes how bash looks up command names`;
  if (RUNS_CODE.test(name) && name !== 'PROMPT_COMMAND')
    return `an assignment to ${name}, which changes what runs`;
  return null;
}

/**
 * What assigning `value` to `name` makes bash evaluate (`PS1=…` is a prompt, `PROMPT_COMMAND=…`
 * code, a value with a subscript arithmetic if `name` is an integer), and the lookup change.
 *
 * @example
 * ```ts
 * assignment('PS1', '$(rm w)'); // { evaluations: [{ kind: 'prompt', … }], problems: [] }
 * ```
 */
export function assignment(name: string, value: string | null, shown: string): Evaluated {
  const base = NAME.exec(name)?.[1] ?? name;
  const out: Evaluated = { evaluations: [], problems: [] };
  if (name !== base) out.evaluations.push(nameEval(name, `the subscript of \`${shown}\``));
  const change = lookupChange(base);
  if (change) out.problems.push(change);
  else if (PROMPT.test(base))
    out.evaluations.push({ kind: 'prompt', text: value, what: `the prompt ${base} (\`${shown}\`)` });
  else if (base === 'PROMPT_COMMAND')
    out.evaluations.push({ kind: 'code', text: value, what: `PROMPT_COMMAND (\`${shown}\`)` });
  else if (value !== null && SUBSCRIPT_CODE.test(value))
    out.evaluations.push({
      kind: 'arith',
      text: value,
      what: `the value of \`${shown}\`, which bash evaluates as arithmetic if ${base} is an integer`,
    });
  return out;
}

/**
 * Why a builtin writing variable `name` (with a value only known when it runs) changes what
 * runs, or `null`.
 *
 * @example
 * ```ts
 * writesSpecial('PS1', '`read`'); // '`read` writes PS1, …'
 * ```
 */
export function writesSpecial(name: string | null, by: string): string | null {
  if (name === null) return null;
  const base = NAME.exec(name)?.[1] ?? name;
  if (LOOKUP.test(base) || PROMPT.test(base) || RUNS_CODE.test(base)) {
    return `${by} writes ${base} (which decides what runs) with a value only known at run time`;
  }
  return null;
}

/**
 * What one simple command (its argv after wrappers, static words or `null`) makes bash evaluate
 * later or elsewhere (SPEC A6).
 *
 * @example
 * ```ts
 * evaluatedWords(['trap', 'rm w', 'EXIT']); // { evaluations: [{ kind: 'code', text: 'rm w', … }], problems: [] }
 * ```
 */
export function evaluatedWords(argv: readonly (string | null)[]): Evaluated {
  const out: Evaluated = { evaluations: [], problems: [] };
  const name = argv[0];
  if (name === null || name === undefined) return out;
  const base = name.slice(name.lastIndexOf('/') + 1);
  const args = argv.slice(1);
  const named = (word: string | null, by: string) => {
    out.evaluations.push(nameEval(word, `the name ${show(word)} of ${by}`));
    const special = writesSpecial(word, by);
    if (special) out.problems.push(special);
  };
  const code = (word: string | null, by: string) =>
    out.evaluations.push({ kind: 'code', text: word, what: `the string ${show(word)} ${by}` });
  switch (base) {
    case 'test':
    case '[':
      args.forEach((a, i) => {
        if (a === '-v' || a === '-R')
          named(args[i + 1] === undefined ? '' : args[i + 1]!, `\`${base} ${a}\``);
      });
      break;
    case 'printf':
      if (args[0] === '-v') named(args[1] === undefined ? '' : args[1]!, '`printf -v`');
      break;
    case 'read':
    case 'mapfile':
    case 'readarray':
    case 'getopts':
    case 'wait': {
      const valued = base === 'read' ? 'adinNptu' : base === 'wait' ? 'p' : 'dnOsuCc';
      const { options, operands } = splitOptions(args, valued);
      for (const [letter, value] of options) {
        if (letter === 'C') code(value, `\`${base} -C\` runs for each line`);
        if (letter === 'a' || (letter === 'p' && base === 'wait')) named(value, `\`${base} -${letter}\``);
      }
      if (base === 'wait') break;
      for (const word of base === 'getopts' ? operands.slice(1, 2) : operands) named(word, `\`${base}\``);
      break;
    }
    case 'compgen':
    case 'complete': {
      const { options } = splitOptions(args, 'oAGWFCXPS');
      for (const [letter, value] of options) {
        if (letter === 'C') code(value, `\`${base} -C\` runs to complete a word`);
        if (letter === 'W')
          out.evaluations.push({
            kind: 'words',
            text: value,
            what: `the word list ${show(value)} of \`${base} -W\``,
          });
      }
      break;
    }
    case 'let':
      for (const a of args)
        out.evaluations.push({ kind: 'arith', text: a, what: `the word ${show(a)} of \`let\`` });
      break;
    case 'trap': {
      const operands = args.filter((a, i) => !(i === 0 && a !== null && /^-[lpP]+$/.test(a)));
      const first = operands[0];
      const resets = first === '-' || (operands.length === 1 && first !== null && /^\d+$/.test(first!));
      if (first !== undefined && !resets && !/^-[lpP]+$/.test(args[0] ?? ''))
        code(first, 'that `trap` runs later');
      break;
    }
    case 'eval':
      code(args.some((a) => a === null) ? null : args.join(' '), 'that `eval` runs');
      break;
    case 'unset':
      for (const a of args) if (a === null || !a.startsWith('-')) named(a, '`unset`');
      break;
    default:
      if (DECLARES.has(base)) declaration(base, args, out);
      else if (SHELLS.has(base)) {
        const at = args.findIndex((a) => a !== null && /^-[a-zA-Z]*c[a-zA-Z]*$/.test(a));
        const string = args.slice(at + 1).find((a) => a === null || !a.startsWith('-'));
        if (at >= 0) code(string === undefined ? '' : string, `that \`${base} -c\` runs`);
      }
  }
  return out;
}

// `declare -n r=PATH`, `local 'a[$(…)]=1'`: flags that change evaluation, names and values.
function declaration(keyword: string, args: readonly (string | null)[], out: Evaluated): void {
  for (const a of args) {
    if (a === null) {
      out.problems.push(`a \`${keyword}\` whose name is only known at run time`);
      continue;
    }
    if (a.startsWith('-') || a.startsWith('+')) {
      const flags = a.slice(1);
      if (flags.includes('n'))
        out.problems.push(
          `a nameref (\`${keyword} -n\`): the name then stands for another variable, which can change command lookup (PATH, BASH_CMDS)`,
        );
      if (flags.includes('i') && a.startsWith('-'))
        out.problems.push(
          `an integer variable (\`${keyword} -i\`): bash evaluates every value later assigned to it`,
        );
      continue;
    }
    const split = splitAssignment(a);
    if (split === null) {
      if (/[$`]/.test(a)) out.problems.push(`\`${keyword} ${a}\` is not a plain assignment: bash expands it`);
      continue;
    }
    if (split.value === null) {
      out.evaluations.push(nameEval(a, `the name ${show(a)} of \`${keyword}\``));
      continue;
    }
    const found = assignment(split.name, split.value, `${keyword} ${a}`);
    out.evaluations.push(...found.evaluations);
    out.problems.push(...found.problems);
  }
}

/**
 * `name[sub]=value` (or `+=`) split as bash splits it: the subscript's brackets nest, so an `=`
 * inside it is not the assignment's. `value` is `null` for a bare name; `null` for a word that
 * is not a name.
 *
 * @example
 * ```ts
 * splitAssignment('a[$(x --y=1)]=2'); // { name: 'a[$(x --y=1)]', value: '2' }
 * ```
 */
export function splitAssignment(word: string): { name: string; value: string | null } | null {
  let i = /^[A-Za-z_]\w*/.exec(word)?.[0].length ?? 0;
  if (i === 0) return null;
  if (word[i] === '[') {
    let depth = 0;
    for (; i < word.length; i++) {
      if (word[i] === '[') depth++;
      else if (word[i] === ']' && --depth === 0) break;
    }
    if (depth !== 0) return null;
    i++;
  }
  const name = word.slice(0, i);
  if (i === word.length) return { name, value: null };
  if (word[i] === '=') return { name, value: word.slice(i + 1) };
  if (word.startsWith('+=', i)) return { name, value: word.slice(i + 2) };
  return null;
}

/**
 * A variable name as bash reads it where a name is expected: `a[sub]` evaluates `sub` as
 * arithmetic; an unknown name is only known at run time.
 *
 * @example
 * ```ts
 * nameEval('a[$(rm w)]', 'the name of `test -v`'); // { kind: 'name', text: 'a[$(rm w)]', … }
 * ```
 */
export function nameEval(word: string | null, what: string): Evaluation {
  return { kind: 'name', text: word, what };
}

/**
 * The arithmetic text inside a name (`a[1+x]` → `1+x`), `''` for a plain name, or `null` when
 * the word is not a name bash would accept but may still expand.
 *
 * @example
 * ```ts
 * subscriptOf('a[$(rm w)]'); // '$(rm w)'
 * ```
 */
export function subscriptOf(word: string): string | null {
  const m = NAME.exec(word);
  if (m) return m[2] ?? '';
  return /[$`]/.test(word) ? null : '';
}

// Getopt-style options of a builtin: `valued` letters take the next word (or the rest of theirs).
function splitOptions(args: readonly (string | null)[], valued: string) {
  const options: [string, string | null][] = [];
  let i = 0;
  for (; i < args.length; i++) {
    const a = args[i];
    if (a === null || a === undefined || !a.startsWith('-') || a === '-') break;
    if (a === '--') {
      i++;
      break;
    }
    for (let k = 1; k < a.length; k++) {
      const c = a[k]!;
      if (!valued.includes(c)) continue;
      const value = k + 1 < a.length ? a.slice(k + 1) : (args[++i] ?? null);
      options.push([c, value]);
      break;
    }
  }
  return { options, operands: args.slice(i) };
}

function show(word: string | null): string {
  return word === null ? '(a word known only at run time)' : `'${word}'`;
}
