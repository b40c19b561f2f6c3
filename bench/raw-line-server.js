// The raw baseline of bench/remote-scale.js: what you would write without Tether to run commands
// through a standing python3 child — a line protocol over its stdin and stdout, driven from the
// main thread. Each request `ID COMMAND` runs `/bin/bash -c COMMAND` on a thread of its own and
// answers `ID EXIT BYTES` (its stdout captured); with `idle` the server first starts one
// `sleep` (the idle job each Tether link holds) and kills it at stdin's end.
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { PYTHON } from './local-host.js';

const SERVER = `
import subprocess, sys, threading
idle = subprocess.Popen(['sleep', '100000']) if sys.argv[1] == '1' else None
lock = threading.Lock()
def run(rid, cmd):
    r = subprocess.run(['/bin/bash', '-c', cmd], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE)
    with lock:
        sys.stdout.write('%s %d %d\\n' % (rid, r.returncode, len(r.stdout)))
        sys.stdout.flush()
sys.stdout.write('ready\\n')
sys.stdout.flush()
for line in sys.stdin:
    rid, cmd = line.rstrip('\\n').split(' ', 1)
    threading.Thread(target=run, args=(rid, cmd)).start()
if idle is not None:
    idle.kill()
    idle.wait()
`;

/**
 * Starts one raw server; resolves once it said `ready` with `{ pid, call(command), close() }`:
 * `call` resolves with `{ exitCode, bytes }`, `close` ends its stdin and resolves at its exit.
 */
export function startRawServer({ idle = false } = {}) {
  const child = spawn(PYTHON, ['-u', '-c', SERVER, idle ? '1' : '0'], {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  const waiting = new Map();
  let nextId = 0;
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    void exited.then((code) => reject(new Error(`the raw server exited (${code}) before it was ready`)));
    createInterface({ input: child.stdout }).on('line', (line) => {
      if (line === 'ready') {
        resolve({
          pid: child.pid,
          call(command) {
            const id = ++nextId;
            return new Promise((done) => {
              waiting.set(id, done);
              child.stdin.write(`${id} ${command}\n`);
            });
          },
          close() {
            child.stdin.end();
            return exited;
          },
        });
        return;
      }
      const [id, exitCode, bytes] = line.split(' ').map(Number);
      waiting.get(id)?.({ exitCode, bytes });
      waiting.delete(id);
    });
  });
}
