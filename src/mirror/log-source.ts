import { readFile } from 'node:fs/promises';
import { TetherError } from '../errors.js';
import type { Fact } from '../observe/fact-types.js';
import type { FactSource } from './mirror-types.js';

/**
 * V3: a recorded JSONL log (docs/FACTS.md) as a fact source: every fact, once, to each
 * observer. Lines that are not facts are skipped and counted.
 *
 * @example
 * ```ts
 * const source = await readFactLog('run.jsonl');
 * const mirror = await createMirror(source, { replay: true });
 * ```
 */
export async function readFactLog(path: string): Promise<FactSource & { readonly skipped: number }> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    throw new TetherError(
      'INVALID_ARGUMENT',
      `cannot read the log '${path}' (${(error as Error).message}); pass a file written with --log or createRuntime({ log })`,
    );
  }
  const facts: Fact[] = [];
  let skipped = 0;
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue;
    try {
      const fact = JSON.parse(line) as Fact;
      if (typeof fact === 'object' && fact !== null && typeof fact.type === 'string') facts.push(fact);
      else skipped++;
    } catch {
      skipped++;
    }
  }
  return {
    skipped,
    observe(listener) {
      for (const fact of facts) listener(fact);
      return () => {};
    },
  };
}
