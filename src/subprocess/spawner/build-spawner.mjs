// Compiles the spawner (tether-spawner.c) into build/tether-spawner at install time (`npm
// install` runs this as the package's install script). The same C toolchain that node-pty
// needs (it has no Linux prebuilds) compiles it in well under a second. Without a compiler,
// or off Linux, nothing is built and the runtime spawns through Node's child_process instead
// (slower: every spawn forks the Node process); this script never fails the install.
import { fileURLToPath } from 'node:url';
import { compileC } from '../compile-c.mjs';

const source = fileURLToPath(new URL('./tether-spawner.c', import.meta.url));

if (process.platform !== 'linux') {
  console.log('tether-runtime: not Linux; spawns go through child_process');
} else if (!compileC(source, 'tether-spawner', ['-O2', '-Wall'])) {
  console.log(
    'tether-runtime: no C compiler found (set CC, or install gcc); spawns go through child_process, ' +
      'which forks the Node process per spawn (see README, "The spawner")',
  );
}
