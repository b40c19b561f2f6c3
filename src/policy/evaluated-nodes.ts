import type { Node } from 'web-tree-sitter';
import {
  assignment,
  type Evaluated,
  type Evaluation,
  nameEval,
  splitAssignment,
  writesSpecial,
} from './evaluated-words.js';
import { staticWord } from './shell-words.js';

const ARITHMETIC_TEST = new Set(['-eq', '-ne', '-lt', '-le', '-gt', '-ge']);
const STRINGS = new Set(['raw_string', 'string', 'ansi_c_string', 'translated_string', 'concatenation']);
const ARITHMETIC_ON_VARIABLES = 'arithmetic on variables (bash may run what they hold)';
// `${!prefix*}`, `${!arr[@]}`: names or keys listed, nothing evaluated.
const LISTS_NAMES = /^\$\{![A-Za-z_]\w*(\*|@|\[[@*]\])\}$/;

/**
 * What one syntax node makes bash evaluate besides running it (SPEC A6): quoted words inside
 * arithmetic (`(( 'a[$(…)]' ))`, `$[…]`, subscripts, `${x:off:len}`, `[[ x -eq y ]]`), names
 * of `[[ -v … ]]`, assignments to prompts, `PROMPT_COMMAND` and command lookup, `for PATH in`,
 * and indirect expansion.
 *
 * @example
 * ```ts
 * nodeEvaluations(compoundNode); // { evaluations: [{ kind: 'arith', text: 'a[$(rm w)]', … }], problems: [] }
 * ```
 */
export function nodeEvaluations(node: Node): Evaluated {
  const out: Evaluated = { evaluations: [], problems: [] };
  switch (node.type) {
    case 'arithmetic_expansion':
    case 'c_style_for_statement':
      arithmeticStrings(node, out);
      break;
    case 'compound_statement':
      if (node.text.startsWith('((')) arithmeticStrings(node, out);
      break;
    case 'subscript': {
      const index = node.childForFieldName('index');
      if (index) arithmeticStrings(index, out, true);
      break;
    }
    case 'binary_expression': {
      const operator = node.childForFieldName('operator');
      if (operator && ARITHMETIC_TEST.has(operator.text) && node.parent?.type === 'test_command') {
        arithmeticStrings(node, out);
      }
      break;
    }
    case 'unary_expression': {
      const operator = node.childForFieldName('operator') ?? node.firstChild;
      const operand = node.namedChildren.at(-1);
      if (operator && ['-v', '-R'].includes(operator.text) && operand && !operand.equals(operator)) {
        out.evaluations.push(
          nameEval(wordOf(operand), `the name ${operand.text} of \`[[ ${operator.text} ]]\``),
        );
      }
      break;
    }
    case 'expansion':
      expansion(node, out);
      break;
    case 'variable_assignment':
      variableAssignment(node, out);
      break;
    case 'for_statement':
    case 'select_statement': {
      const variable = node.childForFieldName('variable');
      const special = variable
        ? writesSpecial(variable.text, `\`${node.type.split('_')[0]} ${variable.text} in\``)
        : null;
      if (special) out.problems.push(special);
      break;
    }
  }
  return out;
}

// Quoted words inside arithmetic are evaluated as arithmetic, subscripts and `$(…)` included.
function arithmeticStrings(node: Node, out: Evaluated, whole = false): void {
  const visit = (n: Node) => {
    if (n.type === 'command_substitution' || n.type === 'process_substitution') return; // parsed as code
    if (
      STRINGS.has(n.type) &&
      (n.type !== 'concatenation' || n.namedChildren.some((c) => c && STRINGS.has(c.type)))
    ) {
      out.evaluations.push({
        kind: 'arith',
        text: staticWord(n),
        what: `the word ${n.text}, which bash evaluates as arithmetic`,
      });
      return;
    }
    for (const child of n.namedChildren) if (child) visit(child);
  };
  if (whole && STRINGS.has(node.type)) visit(node);
  else for (const child of node.namedChildren) if (child) visit(child);
}

// `${x:off:len}` evaluates off and len; `${!y}` evaluates the name y holds.
function expansion(node: Node, out: Evaluated): void {
  const children = node.children.filter((c): c is Node => c !== null);
  if (children[1]?.type === '!' && !LISTS_NAMES.test(node.text)) {
    out.problems.push(
      `indirect expansion ${node.text} (bash evaluates the name the variable holds, subscripts included)`,
    );
  }
  const colon = children.findIndex((c) => c.type === ':');
  if (colon < 0) return;
  for (const part of children.slice(colon + 1)) {
    if (!part.isNamed || part.type === 'number') continue;
    if (STRINGS.has(part.type)) {
      out.evaluations.push({
        kind: 'arith',
        text: staticWord(part),
        what: `the offset ${part.text} of ${node.text}`,
      });
    } else if (part.type !== 'command_substitution') {
      out.problems.push(ARITHMETIC_ON_VARIABLES);
    }
  }
}

function variableAssignment(node: Node, out: Evaluated): void {
  const nameNode = node.childForFieldName('name');
  if (!nameNode) return;
  const name =
    nameNode.type === 'subscript' ? (nameNode.childForFieldName('name')?.text ?? '') : nameNode.text;
  const value = node.childForFieldName('value');
  if (value?.type === 'array') {
    for (const element of value.namedChildren) {
      if (!element) continue;
      if (name === 'PROMPT_COMMAND') {
        out.evaluations.push({
          kind: 'code',
          text: staticWord(element),
          what: `PROMPT_COMMAND (\`${node.text}\`)`,
        });
      } else if (element.text.startsWith('[')) {
        // `([index]=value)`: the index is arithmetic (or, for an associative array, expanded).
        const word = bracketed(element);
        const split = word === null ? null : splitAssignment(`_${word}`);
        const index = split === null ? null : split.name.slice(2, -1);
        out.evaluations.push({ kind: 'arith', text: index, what: `the index of \`${element.text}\`` });
      }
    }
    const found = assignment(name, '', node.text);
    out.problems.push(...found.problems);
    return;
  }
  const found = assignment(name, value ? staticWord(value) : '', node.text);
  out.evaluations.push(...found.evaluations);
  out.problems.push(...found.problems);
}

// `['k']=v` as bash reads it: unquoted brackets are literal here, the rest as staticWord.
function bracketed(node: Node): string | null {
  if (node.type !== 'concatenation') return node.type === 'word' ? node.text : staticWord(node);
  let text = '';
  for (const part of node.namedChildren) {
    const piece = part === null ? null : part.type === 'word' ? part.text : staticWord(part);
    if (piece === null) return null;
    text += piece;
  }
  return text;
}

// A word's static value; a bare variable name (`[[ -v x ]]`) is itself.
function wordOf(node: Node): string | null {
  return node.type === 'variable_name' ? node.text : staticWord(node);
}

export type { Evaluation };
