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
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { execa } from 'execa';
import ts from 'typescript';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { matchesOutput, readmeBlocks } from './readme-blocks.js';

// The README, executed: every block marked `readme: run` is run as written, as a consumer's
// ES module importing `tether-runtime` — the built package of this repository, reached through
// a symlinked node_modules in a temp app (like `npm install`, without the registry: it works
// on a clean clone once `npm test` built dist/).
const root = fileURLToPath(new URL('../..', import.meta.url));
const blocks = readmeBlocks(readFileSync(join(root, 'README.md'), 'utf8'));
const runnable = blocks.flatMap((block, i) => {
  if (block.mark !== 'run') return [];
  const next = blocks[i + 1];
  return [{ block, output: next?.mark === 'output' ? next.code : undefined }];
});

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
  for (const { block } of runnable) writeFileSync(join(app, `block-${block.line}.ts`), block.code);
});
afterAll(() => {
  if (app) rmSync(app, { recursive: true, force: true });
});

describe('README.md', () => {
  it('R: every code block is marked: run (with its output block after it), output, or not run with a reason', () => {
    const unmarked = blocks.filter((b) => b.mark === undefined).map((b) => `line ${b.line} (${b.lang})`);
    expect(unmarked, 'put <!-- readme: run --> or <!-- readme: not run (why) --> above each').toEqual([]);
    for (const [i, b] of blocks.entries()) {
      const at = `README.md line ${b.line}`;
      if (b.mark === 'run') expect(['ts', 'js'], at).toContain(b.lang);
      if (b.mark === 'run') expect(blocks[i + 1]?.mark, `${at}: an output block must follow`).toBe('output');
      if (b.mark === 'output') expect(blocks[i - 1]?.mark, `${at}: output of what?`).toBe('run');
      if (b.mark === 'not run') expect(b.reason, `${at}: say why it is not run`).toBeTruthy();
    }
    expect(runnable.length).toBeGreaterThanOrEqual(5);
  });

  it('R: the runnable blocks type-check as a consumer’s TypeScript against the built package (strict, @types/node)', () => {
    const files = runnable.map(({ block }) => join(app, `block-${block.line}.ts`));
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

  it.each(runnable.map((r) => [r.block.section, r.block.line, r] as const))(
    'R: the block in “%s” (line %i) runs as written and prints what the README shows',
    async (_section, line, { block, output }) => {
      const js = ts.transpileModule(block.code, {
        compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 },
      }).outputText;
      writeFileSync(join(app, `block-${line}.mjs`), js);
      // TMPDIR: spills of the example land in the temp app and go with it.
      const r = await execa(process.execPath, [`block-${line}.mjs`], {
        cwd: app,
        env: { TMPDIR: app },
        reject: false,
        timeout: 60_000,
      });
      expect(r.stderr, `README.md line ${line} wrote to stderr`).toBe('');
      expect(r.exitCode, `README.md line ${line} failed`).toBe(0);
      expect(matchesOutput(output ?? '', r.stdout), `README.md line ${line} printed:\n${r.stdout}`).toBe(
        true,
      );
    },
  );
});
