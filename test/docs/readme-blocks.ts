import { readdirSync } from 'node:fs';
import { join } from 'node:path';

/** How a README code block is marked: `<!-- readme: run -->`, `… output -->`, `… not run (why) -->`. */
export type BlockMark = 'run' | 'output' | 'not run';

/** One fenced code block of a Markdown file. */
export interface ReadmeBlock {
  /** 1-based line of the opening fence. */
  readonly line: number;
  /** The fence's info string's first word (`ts`, `sh`, `json`, `text`). */
  readonly lang: string;
  readonly code: string;
  /** The marker comment right above the fence (blank lines between are allowed); none if missing. */
  readonly mark: BlockMark | undefined;
  /** A `not run` marker's reason. */
  readonly reason?: string;
  /** The heading of the section the block is in. */
  readonly section: string;
}

const MARK = /^<!--\s*readme:\s*(run|output|not run)\s*(?:\((.+)\))?\s*-->$/;
const FENCE = /^(\s*)(`{3,})(\S*)/;

// Every fenced block with the marker above it, for the README doc test.
export function readmeBlocks(markdown: string): ReadmeBlock[] {
  const lines = markdown.split('\n');
  const blocks: ReadmeBlock[] = [];
  let mark: { mark: BlockMark; reason?: string } | undefined;
  let section = '';
  for (let i = 0; i < lines.length; i++) {
    const text = lines[i]!.trim();
    if (/^#{1,6} /.test(lines[i]!)) section = text.replace(/^#+ /, '');
    const marked = MARK.exec(text);
    if (marked) {
      mark = { mark: marked[1] as BlockMark, ...(marked[2] ? { reason: marked[2] } : {}) };
      continue;
    }
    const fence = FENCE.exec(lines[i]!);
    if (!fence) {
      if (text !== '') mark = undefined; // a marker belongs to the block right below it
      continue;
    }
    const [, indent = '', ticks = '```', lang = ''] = fence;
    const body: string[] = [];
    let j = i + 1;
    for (; j < lines.length && lines[j]!.trim() !== ticks; j++) body.push(lines[j]!.slice(indent.length));
    blocks.push({
      line: i + 1,
      lang,
      code: `${body.join('\n')}\n`,
      mark: mark?.mark,
      section,
      ...(mark?.reason ? { reason: mark.reason } : {}),
    });
    mark = undefined;
    i = j;
  }
  return blocks;
}

const literal = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/**
 * Whether `actual` output is what an `output` block shows: line by line, where `…` stands for
 * any text within a line (ids, durations, paths).
 */
export function matchesOutput(expected: string, actual: string): boolean {
  const want = expected.replace(/\n$/, '').split('\n');
  const got = actual.replace(/\n$/, '').split('\n');
  if (want.length !== got.length) return false;
  return want.every((line, i) => new RegExp(`^${line.split('…').map(literal).join('.*')}$`).test(got[i]!));
}

/**
 * Reference documents written before the doc test reached docs/: their blocks show a format
 * (a fact line, a seccomp rule), not a program, and carry no marker.
 */
export const UNMARKED_DOCS: readonly string[] = ['docs/FACTS.md', 'docs/REQUIREMENTS.md', 'docs/SECCOMP.md'];

/** The documents the doc test reads, relative to the repository: README.md, then docs/*.md. */
export function documentedFiles(root: string): string[] {
  const docs = readdirSync(join(root, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .sort()
    .map((name) => `docs/${name}`);
  return ['README.md', ...docs];
}

/**
 * The anchor GitHub gives a heading: lower case, punctuation dropped (hyphens and underscores
 * kept), each space a hyphen.
 */
export function headingAnchor(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N} _-]/gu, '')
    .replace(/ /g, '-');
}

/** Every heading anchor of a Markdown file. */
export function anchorsOf(markdown: string): Set<string> {
  const anchors = new Set<string>();
  let fenced = false;
  for (const line of markdown.split('\n')) {
    if (/^\s*```/.test(line)) fenced = !fenced;
    const heading = fenced ? null : /^#{1,6} (.+)$/.exec(line);
    if (heading) anchors.add(headingAnchor(heading[1]!));
  }
  return anchors;
}
