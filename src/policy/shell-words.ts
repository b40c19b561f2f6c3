import type { Node } from 'web-tree-sitter';

// Unquoted characters that make bash expand a word (globs, braces): its value is not static.
const EXPANDING = /[*?[\]{}]/;

/**
 * The value bash gives a word node when it can be known before running (SPEC A2), else
 * `null`: quotes removed and escapes resolved; variables, substitutions, globs, braces, a
 * leading `~` and `$'…'` are run-time values.
 *
 * @example
 * ```ts
 * staticWord(node); // for `'r'm` → 'rm'; for `$HOME` → null
 * ```
 */
export function staticWord(node: Node): string | null {
  switch (node.type) {
    case 'word':
      return unquotedWord(node.text);
    case 'number':
      return node.text;
    case 'raw_string':
      return node.text.slice(1, -1);
    case 'string':
      return node.namedChildren.every((child) => child?.type === 'string_content')
        ? doubleQuoted(node.text.slice(1, -1))
        : null;
    case 'concatenation': {
      let value = '';
      for (const part of node.namedChildren) {
        const piece = part === null ? null : staticWord(part);
        if (piece === null) return null;
        value += piece;
      }
      return value;
    }
    case 'command_name': {
      const inner = node.namedChildren[0];
      return inner ? staticWord(inner) : null;
    }
    default:
      return null;
  }
}

// A bare word: backslash escapes the next character; expansion characters make it dynamic.
function unquotedWord(text: string): string | null {
  if (text.startsWith('~')) return null;
  let value = '';
  for (let i = 0; i < text.length; i++) {
    const ch = text[i]!;
    if (ch === '\\') {
      i++;
      if (i < text.length && text[i] !== '\n') value += text[i];
      continue;
    }
    if (ch === '$' || ch === '`' || EXPANDING.test(ch)) return null;
    value += ch;
  }
  return value;
}

// Inside "…": only \$ \` \" \\ and \newline are escapes (bash(1), QUOTING).
function doubleQuoted(text: string): string {
  return text.replace(/\\([$`"\\\n])/g, (_, ch: string) => (ch === '\n' ? '' : ch));
}
