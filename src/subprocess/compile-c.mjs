// Install-time helper of the build scripts (build-spawner.mjs, build-allocator.mjs): compiles one
// C file into `build/<name>` with the first compiler that succeeds ($CC, cc, gcc, clang), through
// a temporary file renamed into place, so a failed or half-written build never replaces a good
// one. Returns whether it built; it never throws for a missing compiler.
import { spawnSync } from 'node:child_process';
import { mkdirSync, renameSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/** `compileC(source, 'tether-spawner', ['-O2', '-Wall'])`: true when build/tether-spawner was made. */
export function compileC(source, name, flags) {
  const outDir = fileURLToPath(new URL('../../build/', import.meta.url));
  mkdirSync(outDir, { recursive: true });
  const out = `${outDir}${name}`;
  const temp = `${out}.${process.pid}.tmp`;
  const built = [process.env.CC, 'cc', 'gcc', 'clang']
    .filter(Boolean)
    .some(
      (cc) =>
        spawnSync(cc, [...flags, '-o', temp, source], { stdio: ['ignore', 'inherit', 'inherit'] }).status ===
        0,
    );
  if (built) renameSync(temp, out);
  return built;
}
