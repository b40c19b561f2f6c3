// Compiles allocator-trim.c into build/allocator-trim.node at install time (the package's
// install script runs it after the spawner's). It needs the Node-API headers that come with
// Node (<prefix>/include/node) and a C compiler; without either, or off Linux, nothing is built
// and a disposed runtime leaves the C allocator as it is (allocator.ts); the install never fails.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, renameSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const source = fileURLToPath(new URL('./allocator-trim.c', import.meta.url));
const outDir = fileURLToPath(new URL('../../build/', import.meta.url));
const out = `${outDir}allocator-trim.node`;
const headers = [join(dirname(dirname(process.execPath)), 'include', 'node'), '/usr/include/node'].find(
  (dir) => existsSync(join(dir, 'node_api.h')),
);

if (process.platform !== 'linux') {
  console.log('tether-runtime: not Linux; no allocator trim is built');
} else if (headers === undefined) {
  console.log(
    `tether-runtime: no Node-API headers beside ${process.execPath} (include/node/node_api.h); ` +
      'a disposed runtime does not hand freed C memory back (docs/internals.md, "Memory after dispose")',
  );
} else {
  mkdirSync(outDir, { recursive: true });
  const temp = `${out}.${process.pid}.tmp`;
  const built = [process.env.CC, 'cc', 'gcc', 'clang'].filter(Boolean).some((cc) => {
    const args = ['-O2', '-Wall', '-shared', '-fPIC', `-I${headers}`, '-o', temp, source];
    return spawnSync(cc, args, { stdio: ['ignore', 'inherit', 'inherit'] }).status === 0;
  });
  if (built) renameSync(temp, out);
  else
    console.log(
      'tether-runtime: no C compiler built the allocator trim; freed C memory stays with the process',
    );
}
