// X1 benchmarks, each against a raw ssh2 baseline on the same sshd in the same run:
// remote P1 (`rt.shell.run('true')` through the SSH provider vs a raw ssh2 exec of the command
// the provider runs) and 256 MiB through a remote background job vs a raw ssh2 channel read.
// 5 interleaved runs, min/median/max. `node bench/remote.js` (after `npm run build`; needs
// OpenSSH's sshd, started here on a loopback port). TETHER_BENCH_QUICK=1 for a short run.
// As root it also runs remote P1 as an unprivileged user it creates (`useradd`, removed at the
// end): that user's helper has no cgroup (marker mode), so its kill verdicts take another path.
import { spawnSync } from 'node:child_process';
import { chmodSync, chownSync, mkdirSync } from 'node:fs';
import { loadavg, userInfo } from 'node:os';
import { join } from 'node:path';
import ssh2 from 'ssh2';
import { createRuntime, createSshProvider } from '../dist/src/index.js';
import { startSshdServer } from '../test/support/sshd-server.js';
import { readJobToEnd, timed } from './drive.js';

const quick = process.env.TETHER_BENCH_QUICK === '1';
const RUNS = 5;
const CALLS = quick ? 20 : 100;
const BYTES = (quick ? 32 : 256) * 2 ** 20;
const FLOOD = `head -c ${BYTES} /dev/zero | tr '\\0' a`;

const sorted = (xs) => [...xs].sort((a, b) => a - b);
const median = (xs) => sorted(xs)[Math.floor(xs.length / 2)];
const spread = (xs, digits) =>
  `${sorted(xs)[0].toFixed(digits)} / ${median(xs).toFixed(digits)} / ${sorted(xs).at(-1).toFixed(digits)}`;

function connect(server, username = userInfo().username) {
  const client = new ssh2.Client();
  return new Promise((resolve, reject) => {
    // No Nagle, as the provider's own connection (its window updates go out at once).
    client.once('ready', () => resolve(client.setNoDelay(true))).once('error', reject);
    client.connect({
      host: '127.0.0.1',
      port: server.port,
      username,
      privateKey: server.userKey,
    });
  });
}

// One exec channel, read to its close: the raw cost of a command over SSH.
function rawExec(client, command) {
  return new Promise((resolve, reject) => {
    client.exec(command, { env: { SHLVL: '2' } }, (err, channel) => {
      if (err) return reject(err);
      let bytes = 0;
      channel.on('data', (chunk) => {
        bytes += chunk.length;
      });
      channel.stderr.resume();
      channel.on('close', () => resolve(bytes));
    });
  });
}

const server = await startSshdServer();
const provider = createSshProvider({
  host: '127.0.0.1',
  port: server.port,
  username: userInfo().username,
  privateKey: server.userKey,
  hostKey: server.hostKey,
  helperDir: join(server.dir, 'helper'),
});
const rt = await createRuntime({
  provider,
  cwd: '/tmp',
  spillDir: false,
  limits: { jobRetentionChars: 16 * 2 ** 20 },
});
const client = await connect(server);
const lease = rt.owners.host();
// The unprivileged user (as in test/remote/unprivileged-user.ts): marker mode on the same sshd.
const marker = process.getuid?.() === 0 ? markerUser(server) : null;
function markerUser(srv) {
  const username = `tether-b${process.pid % 1_000_000}`;
  const home = join(srv.dir, username);
  const made = spawnSync('useradd', ['-M', '-d', home, '-s', '/bin/bash', '-p', '*', username]);
  if (made.status !== 0) return null;
  const id = (flag) => Number(spawnSync('id', [flag, username], { encoding: 'utf8' }).stdout.trim());
  mkdirSync(home);
  chownSync(home, id('-u'), id('-g'));
  chmodSync(srv.dir, 0o711);
  chmodSync(join(srv.dir, 'authorized_keys'), 0o644);
  return { username, helperDir: join(home, 'helper') };
}
const markerRt = marker
  ? await createRuntime({
      provider: createSshProvider({
        host: '127.0.0.1',
        port: server.port,
        username: marker.username,
        privateKey: server.userKey,
        hostKey: server.hostKey,
        helperDir: marker.helperDir,
      }),
      cwd: '/tmp',
      spillDir: false,
    })
  : null;
const markerClient = marker ? await connect(server, marker.username) : null;
const load = [loadavg()[0]];
try {
  await rt.shell.run({ command: 'true' }); // connect and upload the helper outside the timing
  await rawExec(client, 'true');
  const p1 = { raw: [], tether: [] };
  const p1m = { raw: [], tether: [] };
  if (markerRt) {
    await markerRt.shell.run({ command: 'true' });
    await rawExec(markerClient, 'true');
  }
  const flood = { raw: [], tether: [] };
  for (let run = 0; run < RUNS; run++) {
    const raw = await timed(async () => {
      for (let i = 0; i < CALLS; i++) await rawExec(client, "/bin/bash -c 'true'");
    });
    const tether = await timed(async () => {
      for (let i = 0; i < CALLS; i++) await rt.shell.run({ command: 'true' });
    });
    p1.raw.push(raw.ms / CALLS);
    p1.tether.push(tether.ms / CALLS);
    if (markerRt) {
      const mraw = await timed(async () => {
        for (let i = 0; i < CALLS; i++) await rawExec(markerClient, "/bin/bash -c 'true'");
      });
      const mtether = await timed(async () => {
        for (let i = 0; i < CALLS; i++) await markerRt.shell.run({ command: 'true' });
      });
      p1m.raw.push(mraw.ms / CALLS);
      p1m.tether.push(mtether.ms / CALLS);
    }
    const rawFlood = await timed(() => rawExec(client, FLOOD));
    const jobFlood = await timed(() => readJobToEnd(rt, lease, FLOOD));
    if (rawFlood.result !== BYTES || jobFlood.result !== BYTES) {
      throw new Error(`flood sizes: raw ${rawFlood.result}, job ${jobFlood.result}, want ${BYTES}`);
    }
    flood.raw.push(BYTES / 1e6 / (rawFlood.ms / 1000));
    flood.tether.push(BYTES / 1e6 / (jobFlood.ms / 1000));
    load.push(loadavg()[0]);
  }
  const ratios = (a, b) => a.map((x, i) => x / b[i]);
  console.log(
    '| benchmark | raw min / median / max | tether min / median / max | ratio (per run) min / median / max | goal |',
  );
  console.log('| --- | --- | --- | --- | --- |');
  console.log(
    `| X1 remote P1 shell.run("true"), ms | ${spread(p1.raw, 2)} | ${spread(p1.tether, 2)} | ${spread(ratios(p1.tether, p1.raw), 2)}× | ≤ 1.3× raw |`,
  );
  if (markerRt) {
    console.log(
      `| X1 remote P1 shell.run("true"), unprivileged user (marker mode), ms | ${spread(p1m.raw, 2)} | ${spread(p1m.tether, 2)} | ${spread(ratios(p1m.tether, p1m.raw), 2)}× | ≤ 1.3× raw |`,
    );
  }
  console.log(
    `| X1 remote job ${BYTES / 2 ** 20} MiB read to the end, MB/s | ${spread(flood.raw, 0)} | ${spread(flood.tether, 0)} | ${spread(ratios(flood.tether, flood.raw), 2)}× | ≥ 0.8× raw |`,
  );
  console.log(
    `\n${RUNS} interleaved runs, ${CALLS} calls each; 1-min load average during the runs: ${load.map((l) => l.toFixed(2)).join(', ')}`,
  );
} finally {
  lease.retire();
  client.end();
  markerClient?.end();
  await rt.dispose();
  await markerRt?.dispose();
  if (marker) spawnSync('userdel', ['-f', marker.username]);
  await server.stop();
}
