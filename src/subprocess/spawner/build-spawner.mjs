// Compiles the spawner (tether-spawner.c) into build/tether-spawner at install time (`npm
// install` runs this as the package's install script). The same C toolchain that node-pty
// needs (it has no Linux prebuilds) compiles it in well under a second. Without a compiler,
// or off Linux, nothing is built and the runtime spawns through Node's child_process instead
// (slower: every spawn forks the Node process); this script never fails the install.
import { spawnSync } from 'node:child_process';
import { mkdirSync, renameSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const source = fileURLToPath(new URL('./tether-spawner.c', import.meta.url));
const outDir = fileURLToPath(new URL('../../../build/', import.meta.url));
const out = `${outDir}tether-spawner`;

if (process.platform !== 'linux') {
  console.log('tether-runtime: not Linux; spawns go through child_process');
} else {
  mkdirSync(outDir, { recursive: true });
  const temp = `${out}.${process.pid}.tmp`;
  let built = false;
  for (const cc of [process.env.CC, 'cc', 'gcc', 'clang'].filter(Boolean)) {
    const result = spawnSync(cc, ['-O2', '-Wall', '-o', temp, source], {
      stdio: ['ignore', 'inherit', 'inherit'],
    });
    if (result.status === 0) {
      renameSync(temp, out);
      built = true;
      break;
    }
  }
  if (!built) {
    console.log(
      'tether-runtime: no C compiler found (set CC, or install gcc); spawns go through child_process, ' +
        'which forks the Node process per spawn (see README, "The spawner")',
    );
  }
}
