/**
 * How `execute` talks to an interactive bash (T7). The shell is started with an rc file that
 * turns off history expansion (`!` stays literal), keeps our lines out of history, sets plain
 * prompts, and reports every finished command line from PROMPT_COMMAND as an OSC sequence
 * carrying the call's nonce and `$?`. PROMPT_COMMAND runs after Ctrl-C too, and it reads its
 * variables with `${…:-}`, so `set -euo pipefail` in a command does not break it. Every prompt
 * ends with an invisible prompt marker (put back if a command replaced PS1), so `execute`
 * returns once the next prompt is drawn: a screen read right after shows it, as a person would.
 */
export const SHELL_RC = String.raw`set +H
HISTCONTROL=ignorespace
PS1='$ \[\033]697;P\007\]'
PS2='> '
bind 'set enable-bracketed-paste off' 2>/dev/null
__tether_done() {
  local s=$?
  if [ -n "${'$'}{__tether_n:-}" ]; then printf '\033]697;E;%s;%s\007' "$__tether_n" "$s"; __tether_n=; fi
  case ${'$'}{PS1:-} in *'697;P'*) ;; *) PS1+='\[\033]697;P\007\]' ;; esac
  return $s
}
__tether_ret() { return "$1"; }
PROMPT_COMMAND=__tether_done
`;

/**
 * How the rc reaches the shell: through its environment, not a file, so a shell that cannot
 * see the runtime's temp directory (a sandbox with a private /tmp, A3; a remote host, X1)
 * still gets it. The first prompt evaluates it, then forgets it (and stops exporting
 * PROMPT_COMMAND, so a nested bash does not inherit `__tether_done`).
 *
 * @example
 * ```ts
 * const env = { TERM: 'xterm-256color', ...SHELL_RC_ENV };
 * spawnTerminal({ argv: ['/bin/bash', '--noprofile', '--norc', '-i'], env, ... });
 * ```
 */
export const SHELL_RC_ENV: Readonly<Record<string, string>> = {
  __TETHER_RC: SHELL_RC,
  PROMPT_COMMAND: 'eval "$__TETHER_RC"; unset __TETHER_RC; export -n PROMPT_COMMAND',
};

/**
 * Whether a terminal's spawn env carries our rc (an interactive bash we talk to with markers),
 * so its first prompt (with {@link PROMPT_MARKER}) is worth waiting for.
 *
 * @example
 * ```ts
 * carriesShellRc(openSpec({}, defaults).env); // true for bash
 * ```
 */
export function carriesShellRc(env: Readonly<Record<string, string | undefined>> | undefined): boolean {
  return env?.__TETHER_RC === SHELL_RC_ENV.__TETHER_RC;
}

const START = '\x1b]697;S;';
/** Printed at the end of every prompt (the rc file's PS1): the shell is ready for a line. */
export const PROMPT_MARKER = '\x1b]697;P\x07';
const PROMPT = PROMPT_MARKER;
const END = '\x1b]697;E;';
const BEL = '\x07';

/**
 * The one line `execute` writes: set the nonce, print the start marker, then run the command
 * through `eval $'…'` (ANSI-C quoting: every byte that is not plainly safe is `\xHH`, so
 * quotes, newlines, heredocs and `!` arrive exactly as given, as one command line).
 *
 * @example
 * ```ts
 * await session.write(executeLine('n1', 'echo "it\'s done"'));
 * ```
 */
export function executeLine(nonce: string, command: string): string {
  let quoted = '';
  for (const byte of Buffer.from(command, 'utf8')) {
    const safe =
      (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5a) || (byte >= 0x61 && byte <= 0x7a);
    quoted += safe || byte === 0x20 ? String.fromCharCode(byte) : `\\x${byte.toString(16).padStart(2, '0')}`;
  }
  // Leading space: HISTCONTROL=ignorespace keeps the wrapper out of the user's history.
  // `$?` is saved first and restored just before the command, so `echo $?` still sees the
  // status of what ran before this call.
  return ` __tether_s=$?; __tether_n=${nonce}; printf '\\033]697;S;%s\\007' "$__tether_n"; __tether_ret $__tether_s; eval $'${quoted}'\r`;
}

/** A finished execution found in the terminal's text, or `null` while its end marker is missing. */
export interface ParsedExecution {
  readonly output: string;
  readonly exitCode: number;
}

/**
 * Finds the output between this nonce's start and end markers in `text` (everything the
 * terminal printed since the line was written), once the prompt after the end marker was drawn.
 * Echo and prompts lie outside the markers; `\r\n` is folded to `\n` (the tty's output
 * translation).
 *
 * @example
 * ```ts
 * parseExecution('echo…\x1b]697;S;n1\x07hi\r\n\x1b]697;E;n1;0\x07$ \x1b]697;P\x07', 'n1'); // { output: 'hi\n', exitCode: 0 }
 * ```
 */
export function parseExecution(text: string, nonce: string): ParsedExecution | null {
  const endMark = `${END}${nonce};`;
  const end = text.indexOf(endMark);
  if (end < 0) return null;
  const bel = text.indexOf(BEL, end + endMark.length);
  if (bel < 0 || !text.includes(PROMPT, bel)) return null;
  const exitCode = Number(text.slice(end + endMark.length, bel));
  const startMark = `${START}${nonce}${BEL}`;
  const start = text.lastIndexOf(startMark, end);
  // Interrupted before the start marker printed: the command never ran.
  const body = start < 0 ? '' : text.slice(start + startMark.length, end);
  return { output: body.replace(/\r\n/g, '\n'), exitCode: Number.isInteger(exitCode) ? exitCode : 1 };
}
