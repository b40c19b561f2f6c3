/** Room kept for a result's fact lines when its output is fitted into the budget. */
export const FACTS_RESERVE = 1_000;

/** What `fitTail` tells the reader about the cut part. */
export interface TailNote {
  /** Published path of the complete output (C2), when there is one. */
  readonly spillPath?: string | undefined;
  /** What to say when no full copy exists (e.g. why the spill failed). */
  readonly otherwise?: string;
}

/**
 * Keeps the last `maxChars` characters of `text` (C2: errors and summaries are at the end),
 * behind one marker line that says it was cut and where the full output is. The result
 * is never longer than `maxChars` plus the marker line.
 *
 * @example
 * ```ts
 * fitTail('a'.repeat(100), 10, { spillPath: '/tmp/x.log' });
 * // '[tether: output cut to its last 10 characters; full output: /tmp/x.log (…)]\naaaaaaaaaa'
 * ```
 */
export function fitTail(text: string, maxChars: number, note: TailNote = {}): string {
  if (text.length <= maxChars) return text;
  let start = text.length - maxChars;
  // Never start inside a surrogate pair.
  const code = text.charCodeAt(start);
  if (code >= 0xdc00 && code <= 0xdfff) start++;
  const where = note.spillPath
    ? `; full output: ${note.spillPath} (read parts of it with bash, e.g. grep or sed -n)`
    : note.otherwise
      ? `; ${note.otherwise}`
      : '';
  const tail = text.slice(start);
  return `[tether: output cut to its last ${tail.length} characters${where}]\n${tail}`;
}

/**
 * Fits a whole result text into `budget` characters, marker included (the registry's last
 * step, so every result respects the budget whatever a tool produced).
 *
 * @example
 * ```ts
 * fitBudget(longText, 30_000).length <= 30_000; // true
 * ```
 */
export function fitBudget(text: string, budget: number): string {
  if (text.length <= budget) return text;
  // The marker is at most ~60 characters; leave it room.
  return fitTail(text, budget - 80);
}

/**
 * Ends `text` with exactly one newline when it is not empty, so fact lines start on their own.
 *
 * @example
 * ```ts
 * withNewline('hi'); // 'hi\n'
 * ```
 */
export function withNewline(text: string): string {
  return text.length === 0 || text.endsWith('\n') ? text : `${text}\n`;
}

/**
 * A duration for a model: `850 ms`, `12.4 s`, `3 min 20 s`.
 *
 * @example
 * ```ts
 * formatMs(12_400); // '12.4 s'
 * ```
 */
export function formatMs(ms: number): string {
  if (ms < 1_000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1_000).toFixed(1)} s`;
  const minutes = Math.floor(ms / 60_000);
  return `${minutes} min ${Math.round((ms % 60_000) / 1_000)} s`;
}
