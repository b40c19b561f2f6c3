import { assertArgument } from '../errors.js';
import { basename, commandTargets } from './command-targets.js';
import type { PolicyDecision, PolicyRule, SimpleCommand } from './policy-types.js';
import type { ParsedLine } from './shell-parse.js';

/**
 * What the rules and the default say about a line, and why in words.
 *
 * @example
 * ```ts
 * const v: LineVerdict = { decision: 'ask', reason: 'rules cannot judge this line: …', undecidable: ['backticks `…`'] };
 * ```
 */
export interface LineVerdict {
  readonly decision: PolicyDecision;
  readonly reason: string;
  /** Why no rule may allow it (the parser's and each command's run-time shapes). */
  readonly undecidable: readonly string[];
}

const RANK: Readonly<Record<PolicyDecision, number>> = { allow: 0, ask: 1, deny: 2 };
const stricter = (a: PolicyDecision, b: PolicyDecision): PolicyDecision => (RANK[a] >= RANK[b] ? a : b);

/**
 * Judges a parsed line (SPEC A2): a line is allowed only when every simple command is (and
 * every program a wrapper in it runs); any deny denies; a shape no parser can decide is never
 * allowed by a rule: it asks, or takes the default when that is stricter. `escalate` (A4) is
 * never allowed by a rule either.
 *
 * @example
 * ```ts
 * judgeLine(parser.parse('git status; rm -rf /'), rules, 'ask');
 * // { decision: 'deny', reason: 'rule deny [rm] matches `rm -rf /`', undecidable: [] }
 * ```
 */
export function judgeLine(
  line: ParsedLine,
  rules: readonly PolicyRule[],
  fallback: PolicyDecision,
  escalate = false,
): LineVerdict {
  const undecidable = new Set(line.undecidable);
  let decision: PolicyDecision = 'allow';
  let reason = 'the line runs no command';
  for (const command of line.commands) {
    const { targets, problems } = commandTargets(command.argv);
    for (const p of problems) undecidable.add(p);
    for (const target of targets) {
      const rule = strictestMatch(rules, target.argv);
      if (rule === null && target.wrapper) continue; // a wrapper passes the decision on
      let d = rule?.decision ?? fallback;
      let why = explain(rule, d, command, target.argv);
      // A6: a program no rule allows, naming a denied one, may run it (`setsid`, `ld.so`, …).
      const named = rule?.decision === 'allow' || target.wrapper ? null : deniedWord(rules, target.argv);
      if (named !== null && RANK[d] < RANK.ask) {
        d = 'ask';
        why = `\`${show(target.argv)}\` is not a known wrapper and no rule allows it, but its arguments name \`${named.word}\`, which rule deny [${named.rule.prefix.join(' ')}] matches: it may run it`;
      }
      if (RANK[d] > RANK[decision] || reason === 'the line runs no command') {
        decision = stricter(decision, d);
        reason = why;
      }
      if (decision === 'deny') return { decision, reason, undecidable: [...undecidable] };
    }
  }
  if (undecidable.size > 0) {
    const d = stricter(stricter('ask', fallback), decision);
    const asked = decision === 'ask' && reason !== 'the line runs no command' ? `${reason}; ` : '';
    const why = `${asked}rules cannot judge this line: ${[...undecidable].join('; ')}`;
    return {
      decision: d,
      reason: d === 'ask' ? why : `${why}, and the default is ${d}`,
      undecidable: [...undecidable],
    };
  }
  if (escalate) {
    return {
      decision: stricter('ask', decision),
      reason: 'running outside the sandbox always needs approval',
      undecidable: [],
    };
  }
  return { decision, reason, undecidable: [] };
}

/**
 * Judges opening a terminal (SPEC A1): its shell is matched by the rules like a command's first
 * word (`{ decision: 'allow', prefix: ['/bin/bash'] }`), else the default applies. An
 * interactive shell reads commands from its input by design: that input is raw input (the
 * policy's `rawInput`), not a shape to ask about.
 *
 * @example
 * ```ts
 * judgeTerminal('/bin/bash', rules, 'ask');
 * ```
 */
export function judgeTerminal(
  shell: string,
  rules: readonly PolicyRule[],
  fallback: PolicyDecision,
): LineVerdict {
  const rule = strictestMatch(rules, [shell]);
  const command = { argv: [shell], text: shell, redirects: [] };
  return {
    decision: rule?.decision ?? fallback,
    reason: explain(rule, rule?.decision ?? fallback, command, command.argv),
    undecidable: [],
  };
}

/**
 * Checks a policy's rules (INVALID_ARGUMENT naming the rule) so a typo fails at
 * `createRuntime` or `agents.create`, not at the first command.
 *
 * @example
 * ```ts
 * assertRules([{ decision: 'allow', prefix: ['git', 'status'] }]);
 * ```
 */
export function assertRules(rules: unknown): asserts rules is readonly PolicyRule[] {
  assertArgument(Array.isArray(rules), 'policy.rules must be an array of { decision, prefix }');
  rules.forEach((rule: Partial<PolicyRule> | null, i) => {
    assertArgument(
      typeof rule === 'object' && rule !== null && ['allow', 'ask', 'deny'].includes(rule.decision as string),
      `policy.rules[${i}].decision must be 'allow', 'ask' or 'deny'`,
    );
    assertArgument(
      Array.isArray(rule.prefix) &&
        rule.prefix.length > 0 &&
        rule.prefix.every((w) => typeof w === 'string' && w.length > 0),
      `policy.rules[${i}].prefix must be a non-empty array of argv words, e.g. ['git', 'status']`,
    );
  });
}

// The strictest rule whose prefix starts this argv; unknown (`null`) words never match.
function strictestMatch(rules: readonly PolicyRule[], argv: readonly (string | null)[]): PolicyRule | null {
  let best: PolicyRule | null = null;
  for (const rule of rules) {
    if (!matches(rule, argv)) continue;
    if (best === null || RANK[rule.decision] > RANK[best.decision]) best = rule;
  }
  return best;
}

function matches(rule: PolicyRule, argv: readonly (string | null)[]): boolean {
  if (argv.length < rule.prefix.length) return false;
  return rule.prefix.every((word, i) => {
    const actual = argv[i];
    if (actual === null || actual === undefined) return false;
    if (actual === word) return true;
    // deny and ask also catch `/bin/rm` for `rm`; allow never does (a planted ./git is not git).
    return i === 0 && rule.decision !== 'allow' && !word.includes('/') && basename(actual) === word;
  });
}

// Programs that never run their arguments: naming `rm` there is not running it.
const INERT = new Set(['echo', 'printf', ':', 'true', 'false', 'test', '[', 'cd', 'pwd', 'type', 'which']);
const SPLIT = /[\s;&|()<>`'"=,:]+/;

// The first argument word (or word inside an argument) a deny rule matches as a command.
function deniedWord(
  rules: readonly PolicyRule[],
  argv: readonly (string | null)[],
): { word: string; rule: PolicyRule } | null {
  if (argv[0] === null || argv[0] === undefined || INERT.has(basename(argv[0]))) return null;
  const denies = rules.filter((r) => r.decision === 'deny');
  if (denies.length === 0) return null;
  for (let i = 1; i < argv.length; i++) {
    const word = argv[i];
    if (word === null || word === undefined) continue;
    const runs = [argv.slice(i), word.split(SPLIT).filter((w) => w !== '')];
    for (const words of runs) {
      for (let j = 0; j < words.length; j++) {
        const rule = denies.find((r) => matches(r, words.slice(j)));
        if (rule) return { word: words[j]!, rule };
        if (words === runs[0]) break; // whole argv words: only from this argument on
      }
    }
  }
  return null;
}

function explain(
  rule: PolicyRule | null,
  d: PolicyDecision,
  command: SimpleCommand,
  argv: readonly (string | null)[],
): string {
  const shown = argv === command.argv ? command.text : `${command.text}\` (which runs \`${show(argv)}`;
  const where = command.via === undefined ? '' : ` in ${command.via}`;
  if (rule === null) return `no rule matches \`${shown}\`${where} and the default is ${d}`;
  return `rule ${rule.decision} [${rule.prefix.join(' ')}] matches \`${shown}\`${where}`;
}

function show(argv: readonly (string | null)[]): string {
  return argv.map((w) => w ?? '…').join(' ');
}
