import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { execa } from 'execa';
import ts from 'typescript';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { anchorsOf, documentedFiles, matchesOutput, readmeBlocks, UNMARKED_DOCS } from './readme-blocks.js';

// The README and docs/, executed: every block marked `readme: run` is run as written, as a
// consumer's ES module importing `tether-runtime` — the built package of this repository,
// reached through a symlinked node_modules in a temp app (like `npm install`, without the
// registry: it works on a clean clone once `npm test` built dist/).
const root = fileURLToPath(new URL('../..', import.meta.url));
const docs = documentedFiles(root).map((doc) => ({
  doc,
  blocks: readmeBlocks(readFileSync(join(root, doc), 'utf8')),
}));
const runnable = docs.flatMap(({ doc, blocks }) =>
  blocks.flatMap((block, i) => {
    if (block.mark !== 'run') return [];
    const next = blocks[i + 1];
    const file = `block-${doc.replace(/[/.]/g, '-')}-${block.line}`;
    return [{ doc, block, file, output: next?.mark === 'output' ? next.code : undefined }];
  }),
);

let app: string;
beforeAll(() => {
  if (!existsSync(join(root, 'dist', 'src', 'index.js'))) {
    throw new Error('dist/ is missing: run `npm run build` first (npm test does)');
  }
  app = mkdtempSync(join(tmpdir(), 'tether-readme-'));
  mkdirSync(join(app, 'node_modules'));
  symlinkSync(root, join(app, 'node_modules', 'tether-runtime'));
  // TypeScript users install @types/node (the README says so): the same here.
  symlinkSync(join(root, 'node_modules', '@types'), join(app, 'node_modules', '@types'));
  writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'readme-app', type: 'module' }));
  for (const { block, file } of runnable) writeFileSync(join(app, `${file}.ts`), block.code);
});
afterAll(() => {
  if (app) rmSync(app, { recursive: true, force: true });
});

describe('README.md and docs/', () => {
  it.each(docs.filter(({ doc }) => !UNMARKED_DOCS.includes(doc)).map((d) => [d.doc, d] as const))(
    'R: every code block of %s is marked: run (with its output block after it), output, or not run with a reason',
    (doc, { blocks }) => {
      const unmarked = blocks.filter((b) => b.mark === undefined).map((b) => `line ${b.line} (${b.lang})`);
      expect(
        unmarked,
        `${doc}: put <!-- readme: run --> or <!-- readme: not run (why) --> above each`,
      ).toEqual([]);
      for (const [i, b] of blocks.entries()) {
        const at = `${doc} line ${b.line}`;
        if (b.mark === 'run') expect(['ts', 'js'], at).toContain(b.lang);
        if (b.mark === 'run')
          expect(blocks[i + 1]?.mark, `${at}: an output block must follow`).toBe('output');
        if (b.mark === 'output') expect(blocks[i - 1]?.mark, `${at}: output of what?`).toBe('run');
        if (b.mark === 'not run') expect(b.reason, `${at}: say why it is not run`).toBeTruthy();
      }
    },
  );

  it('R: the docs keep their runnable examples (at least nine in all, one in the README’s quick start)', () => {
    expect(runnable.length).toBeGreaterThanOrEqual(9);
    expect(runnable.filter((r) => r.doc === 'README.md').map((r) => r.block.section)).toContain(
      'Quick start',
    );
  });

  it('R: the README links every document in docs/, and its quick start fits one screen', () => {
    const readme = readFileSync(join(root, 'README.md'), 'utf8');
    const unlinked = docs
      .map((d) => d.doc)
      .filter((doc) => doc !== 'README.md' && !readme.includes(`](${doc}`));
    expect(unlinked, 'link each from the README’s Documentation table').toEqual([]);
    const quickStart = /^## Quick start\n([\s\S]*?)^## /m.exec(readme)?.[1] ?? '';
    expect(
      quickStart.trim().split('\n').length,
      'the quick start: clone, demo, one snippet, the MCP config',
    ).toBeLessThanOrEqual(50);
  });

  it('R: every relative link of README.md and docs/ reaches a file, and every #anchor a heading of it', () => {
    const broken: string[] = [];
    for (const { doc } of docs) {
      const text = readFileSync(join(root, doc), 'utf8');
      for (const [, target] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
        if (/^[a-z]+:/.test(target!)) continue; // a URL
        const [path = '', anchor] = target!.split('#');
        const file = path === '' ? join(root, doc) : join(root, dirname(doc), path);
        if (!existsSync(file)) broken.push(`${doc}: ${target} (no such file)`);
        else if (anchor && !anchorsOf(readFileSync(file, 'utf8')).has(anchor)) {
          broken.push(`${doc}: ${target} (no such heading)`);
        }
      }
    }
    expect(broken).toEqual([]);
  });

  it('R: every src/, machines/, workers/, test/ and bench/ path the docs name exists', () => {
    const missing = docs.flatMap(({ doc }) =>
      [
        ...readFileSync(join(root, doc), 'utf8').matchAll(
          /`((?:src|machines|workers|test|bench)\/[\w./-]*)`/g,
        ),
      ]
        .map((m) => m[1]!)
        .filter((path) => !existsSync(join(root, path)))
        .map((path) => `${doc}: ${path}`),
    );
    expect(missing, 'a file moved or was renamed: update the doc').toEqual([]);
  });

  it('R: the runnable blocks type-check as a consumer’s TypeScript against the built package (strict, @types/node)', () => {
    const files = runnable.map(({ file }) => join(app, `${file}.ts`));
    const program = ts.createProgram(files, {
      module: ts.ModuleKind.NodeNext,
      moduleResolution: ts.ModuleResolutionKind.NodeNext,
      target: ts.ScriptTarget.ES2022,
      strict: true,
      noEmit: true,
      types: ['node'],
      typeRoots: [join(app, 'node_modules', '@types')],
      skipLibCheck: true, // as most apps do; our own .d.ts are checked by tsc -p tsconfig.build.json
    });
    const problems = ts.getPreEmitDiagnostics(program).map((d) => {
      const text = ts.flattenDiagnosticMessageText(d.messageText, '\n');
      if (!d.file || d.start === undefined) return text;
      const { line } = d.file.getLineAndCharacterOfPosition(d.start);
      return `${d.file.fileName.replace(app, '')}:${line + 1}: ${text}`;
    });
    expect(problems).toEqual([]);
  });

  it.each(runnable.map((r) => [r.doc, r.block.section, r.block.line, r] as const))(
    'R: the block in %s › “%s” (line %i) runs as written and prints what it shows',
    async (doc, _section, line, { block, file, output }) => {
      const js = ts.transpileModule(block.code, {
        compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 },
      }).outputText;
      writeFileSync(join(app, `${file}.mjs`), js);
      // TMPDIR: spills of the example land in the temp app and go with it.
      const r = await execa(process.execPath, [`${file}.mjs`], {
        cwd: app,
        env: { TMPDIR: app },
        reject: false,
        timeout: 60_000,
      });
      const at = `${doc} line ${line}`;
      expect(r.stderr, `${at} wrote to stderr`).toBe('');
      expect(r.exitCode, `${at} failed`).toBe(0);
      expect(matchesOutput(output ?? '', r.stdout), `${at} printed:\n${r.stdout}`).toBe(true);
    },
  );
});
