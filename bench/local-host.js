// The helper link bench/remote-scale*.js measure: the exec provider (X5) over `/usr/bin/env` on
// this machine, the cheapest real transport. Its PATH is the system's: `python3` in root's PATH
// here is a pyenv shim (a bash script running `pyenv exec`) that takes ~0.9 s (0.6 s CPU) to
// start, which every link's connect would pay and no container's `python3` does. The raw side
// runs the same interpreter.
import { createExecProvider } from '../dist/src/index.js';

/** The interpreter both sides run. */
export const PYTHON = '/usr/bin/python3';

/** An exec provider whose helper runs here, in `helperDir` (its own daemon per directory). */
export function localExecProvider(helperDir, label) {
  return createExecProvider({ argv: ['/usr/bin/env', 'PATH=/usr/bin:/bin'], helperDir, label });
}
