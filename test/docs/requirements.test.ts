import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../..', import.meta.url));
const doc = readFileSync(join(root, 'docs', 'REQUIREMENTS.md'), 'utf8');
/** Ids the document defines: its `- **J4**` entries. */
const defined = new Set([...doc.matchAll(/^- \*\*([A-Z]\d*)\*\*/gm)].map((m) => m[1]!));

// Every test file below test/.
function testFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return testFiles(path);
    return entry.name.endsWith('.test.ts') ? [path] : [];
  });
}

// The ids a test title cites before its colon: 'W2–W5, D1: …' cites W2, W3, W4, W5 and D1.
function citedIds(title: string): string[] {
  const head = title.split(':')[0] ?? '';
  if (
    !/^[A-Z]\d*(?:\s*[–-]\s*[A-Z]?\d+)?(?:\s*(?:,|\/|and)\s*[A-Z]\d*(?:\s*[–-]\s*[A-Z]?\d+)?)*$/.test(
      head.trim(),
    )
  ) {
    return [];
  }
  return [...head.matchAll(/([A-Z])(\d*)(?:\s*[–-]\s*[A-Z]?(\d+))?/g)].flatMap(([, letter, from, to]) => {
    if (!from) return [letter!];
    const last = to ? Number(to) : Number(from);
    return Array.from({ length: last - Number(from) + 1 }, (_, i) => `${letter}${Number(from) + i}`);
  });
}

describe('docs/REQUIREMENTS.md', () => {
  it('R: defines every requirement family (S C J T O W D M R G K X V A)', () => {
    for (const family of ['S', 'C', 'J', 'T', 'O', 'W', 'D', 'K', 'X', 'V', 'A']) {
      expect(
        [...defined].some((id) => id.startsWith(family) && id.length > 1),
        family,
      ).toBe(true);
    }
    for (const single of ['M', 'R', 'G']) expect(defined, single).toContain(single);
  });

  it('R: every requirement id a test title cites is explained there', () => {
    const cited = new Map<string, string>();
    for (const file of testFiles(join(root, 'test'))) {
      const text = readFileSync(file, 'utf8');
      for (const [, title] of text.matchAll(/\bit(?:\.each\([\s\S]*?\))?\(\s*['"`]([^'"`]+)['"`]/g)) {
        for (const id of citedIds(title!)) cited.set(id, `${file.replace(root, '')}: ${title}`);
      }
    }
    expect(cited.size).toBeGreaterThan(30);
    const missing = [...cited].filter(([id]) => !defined.has(id)).map(([id, where]) => `${id} (${where})`);
    expect(missing).toEqual([]);
  });
});
