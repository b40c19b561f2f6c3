import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { execa } from 'execa';
import { beforeAll, describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../..', import.meta.url));
const DOCS = ['README.md', 'BENCHMARKS.md', 'docs/REQUIREMENTS.md'];
let packed: Set<string>;

// What `npm pack` would put in the tarball (a dry run writes nothing).
beforeAll(async () => {
  const r = await execa('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: root });
  const [pack] = JSON.parse(r.stdout) as [{ files: { path: string }[] }];
  packed = new Set(pack.files.map((f) => f.path));
});

// Whether the tarball holds `path`, a file or a folder (`machines/`).
const holds = (path: string) => {
  const clean = path.replace(/^\.\//, '').replace(/#.*$/, '');
  return packed.has(clean) || [...packed].some((p) => p.startsWith(`${clean.replace(/\/$/, '')}/`));
};

describe('the packed package', () => {
  it('R: ships the docs a user reads and every relative link in them resolves inside the tarball', () => {
    for (const doc of DOCS) expect(packed, doc).toContain(doc);
    const broken: string[] = [];
    for (const doc of DOCS) {
      const text = readFileSync(join(root, doc), 'utf8');
      for (const [, target] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
        if (/^[a-z]+:/.test(target!) || target!.startsWith('#')) continue; // a URL or an anchor
        const from = doc.includes('/') ? doc.slice(0, doc.lastIndexOf('/') + 1) : '';
        const path = new URL(target!, `file:///${from}`).pathname.slice(1);
        if (!holds(path)) broken.push(`${doc}: ${target}`);
      }
    }
    expect(broken, 'link the repository, or add the file to package.json "files"').toEqual([]);
  });

  it('R: every src/, machines/, workers/ and docs/ path the README names is in the tarball', () => {
    const readme = readFileSync(join(root, 'README.md'), 'utf8');
    const named = [...readme.matchAll(/`((?:src|machines|workers|docs)\/[\w./-]*)`/g)].map((m) => m[1]!);
    expect(named.length).toBeGreaterThan(3);
    expect(named.filter((path) => !holds(path))).toEqual([]);
  });

  it('R: package.json names the package tether-runtime, its command tether, ESM only, Node 20.5+', () => {
    const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
    expect(pkg).toMatchObject({
      name: 'tether-runtime',
      type: 'module',
      bin: { tether: './dist/src/cli/main.js' },
      engines: { node: '>=20.5' },
    });
    expect(pkg.exports['.']).not.toHaveProperty('require');
    // a consumer's npm 11 would list a prepare script as one more install script to approve
    expect(pkg.scripts).not.toHaveProperty('prepare');
  });
});
