import { assertArgument } from '../errors.js';
import type { AgentOwnerToken } from '../owners/owner-token.js';
import { renderScreen, type TerminalScreen } from './screen.js';
import type { TerminalTable } from './terminal-table.js';
import type { TerminalChunk, TerminalInfo } from './terminal-types.js';

/**
 * `read` (T3): a page of the terminal's retained output from `cursor`; also after it ended.
 *
 * @example
 * ```ts
 * const { text, cursor } = readTerminal(table, owner, id, 0, 32_000);
 * ```
 */
export function readTerminal(
  table: TerminalTable,
  owner: AgentOwnerToken,
  id: string,
  cursor: number,
  maxChars: number,
): TerminalChunk {
  const record = table.lookup(owner, id, true);
  assertArgument(
    Number.isSafeInteger(cursor) && cursor >= 0,
    `cursor must be an integer >= 0, got ${cursor}`,
  );
  assertArgument(
    Number.isSafeInteger(maxChars) && maxChars > 0,
    `maxChars must be a positive integer, got ${maxChars}`,
  );
  const page = record.output.read(cursor, maxChars);
  return { text: page.text, cursor: page.cursor, lossy: page.lossy };
}

/**
 * `screen`: the recent output rendered by a headless xterm; does not move the read cursor.
 *
 * @example
 * ```ts
 * console.log((await screenOf(table, owner, id)).text);
 * ```
 */
export function screenOf(table: TerminalTable, owner: AgentOwnerToken, id: string): Promise<TerminalScreen> {
  const record = table.lookup(owner, id, true);
  return renderScreen(record.screenTail.text(), record.spec.cols, record.spec.rows);
}

/**
 * `list`: the owner's open terminals, hidden ones (persistent bash) left out.
 *
 * @example
 * ```ts
 * const open = listTerminals(table, owner).map((t) => t.id);
 * ```
 */
export function listTerminals(table: TerminalTable, owner: AgentOwnerToken): TerminalInfo[] {
  const { owners } = table.config;
  const key = owners.keyOf(owners.assertLive(owner));
  return [...table.records.values()].filter((r) => r.ownerKey === key && !r.hidden).map((r) => r.info());
}
