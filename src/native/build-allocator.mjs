// Compiles allocator-trim.c into build/allocator-trim.node at install time (the package's
// install script runs it after the spawner's). It needs the Node-API headers that come with
// Node (<prefix>/include/node) and a C compiler; without either, or off Linux, nothing is built
// and a disposed runtime leaves the C allocator as it is (allocator.ts); the install never fails.
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { compileC } from '../subprocess/compile-c.mjs';

const source = fileURLToPath(new URL('./allocator-trim.c', import.meta.url));
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
} else if (!compileC(source, 'allocator-trim.node', ['-O2', '-Wall', '-shared', '-fPIC', `-I${headers}`])) {
  console.log(
    'tether-runtime: no C compiler built the allocator trim; freed C memory stays with the process',
  );
}
