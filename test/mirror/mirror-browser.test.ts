import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createMirror, createRuntime, type Mirror, type Runtime, readFactLog } from '../../src/index.js';
import { launchSharedBrowser, type SharedBrowser } from '../support/browser.js';

const cli = fileURLToPath(new URL('../../dist/src/cli/main.js', import.meta.url));
// Kept by CI as a test artifact (gitignored), never committed.
const ARTIFACTS = fileURLToPath(new URL('../../test-artifacts/', import.meta.url));

let shared: SharedBrowser;
let dir: string;
beforeAll(async () => {
  shared = await launchSharedBrowser();
  dir = mkdtempSync(join(tmpdir(), 'tether-mirror-'));
});
afterAll(async () => {
  await shared?.close();
  rmSync(dir, { recursive: true, force: true });
});

let rt: Runtime | undefined;
let mirror: Mirror | undefined;
let page: Page;
beforeEach(async () => {
  page = await shared.browser.newPage({ viewport: { width: 1400, height: 1000 } });
});
afterEach(async () => {
  await page.context().close();
  await mirror?.close();
  await rt?.dispose();
  mirror = undefined;
  rt = undefined;
});

async function open(m: Mirror): Promise<void> {
  await page.goto(m.url);
  await page.waitForSelector('body[data-ready="true"]');
  expect(new URL(page.url()).search).toBe(''); // the code left the address bar
}

const job = (id: string) => page.locator(`.job[data-actor="job:${id}"]`);

describe('the mirror page in Chromium', () => {
  it('V2: lists a running job as still controllable, then shows it succeeded with its exit code, without a reload', async () => {
    rt = await createRuntime({ limits: { cleanupGraceMs: 200 } });
    mirror = await createMirror(rt);
    await open(mirror);
    const lease = rt.owners.host();
    const flag = join(dir, 'go');
    const started = await rt.shell.background(lease.token, {
      command: `while [ ! -e ${flag} ]; do sleep 0.05; done; echo finished`,
    });
    await job(started.id).and(page.locator('[data-state="running"]')).waitFor();
    expect(await job(started.id).getByTestId('control').textContent()).toBe('still controllable');
    // V2: the job machine's diagram marks the state the live job is in.
    await page.locator('svg[data-machine="job"] g.state.current[data-state="job.running.active"]').waitFor();
    writeFileSync(flag, '');
    await job(started.id).and(page.locator('[data-state="succeeded"]')).waitFor();
    expect(await job(started.id).getByTestId('job-exit').textContent()).toBe('exit 0');
    expect(await job(started.id).getByTestId('control').textContent()).toBe('was started');
    await page.getByText('finished').first().waitFor(); // the output tail
    expect(await page.locator('svg[data-machine="job"] g.state.current').count()).toBe(0);
    mkdirSync(ARTIFACTS, { recursive: true });
    await page.screenshot({ path: join(ARTIFACTS, 'mirror-live.png'), fullPage: true });
  });

  it("V2: a terminal's screen shows what a program drew", async () => {
    rt = await createRuntime({ limits: { cleanupGraceMs: 200 } });
    mirror = await createMirror(rt);
    await open(mirror);
    const lease = rt.owners.host();
    const t = await rt.terminals.open(lease.token);
    await rt.terminals.send(lease.token, t.id, "printf '\\033[2J\\033[H+--box--+\\n|drawn|\\n'\r", {
      timeoutMs: 10_000,
    });
    const screen = page.locator(`.terminal[data-actor="terminal:${t.id}"] [data-testid="screen"]`);
    await screen.filter({ hasText: '|drawn|' }).waitFor();
    expect(await screen.textContent()).toMatch(/^\+--box--\+\n\|drawn\|/);
  });

  it('V4: output and labels that look like HTML or terminal escapes are shown as text', async () => {
    rt = await createRuntime({ limits: { cleanupGraceMs: 200 } });
    mirror = await createMirror(rt);
    await open(mirror);
    const lease = rt.owners.host();
    const command =
      "printf '<script>window.pwned=1</script><img src=x onerror=window.pwned=2>\\033[31mred\\n' # <b>bold</b>";
    const started = await rt.shell.background(lease.token, { command });
    await rt.jobs.wait(lease.token, started.id, 10_000);
    const tail = job(started.id).getByTestId('job-tail');
    await tail.filter({ hasText: 'red' }).waitFor();
    expect(await tail.textContent()).toBe(
      '<script>window.pwned=1</script><img src=x onerror=window.pwned=2>\u241b[31mred\n',
    );
    expect(await job(started.id).getByTestId('job-label').textContent()).toBe(
      command.replace('\\033', '\\033'),
    );
    expect(await page.evaluate('typeof window.pwned')).toBe('undefined');
    expect(await page.locator('main script, main img').count()).toBe(0);
    expect(await page.locator('main b', { hasText: /^bold$/ }).count()).toBe(0);
  });

  it('V3: the replay of a recorded demo log reaches the end, and scrubbing back shows an earlier moment', async () => {
    const log = join(dir, 'demo.jsonl');
    const demo = spawnSync(process.execPath, [cli, 'demo', '--log', log], {
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect(demo.status).toBe(0);
    const lines = readFileSync(log, 'utf8').trim().split('\n');
    mirror = await createMirror(await readFactLog(log), { replay: true });
    await open(mirror);
    await page
      .getByTestId('position')
      .filter({ hasText: `fact ${lines.length} of ${lines.length}` })
      .waitFor();
    expect(await page.getByTestId('runtime').textContent()).toMatch(/: disposed$/);
    expect(await page.locator('.job').count()).toBe(3);
    // The demo's terminal as it looked when it closed (its last sampled screen).
    expect(await page.locator('.terminal [data-testid="screen"]').textContent()).toContain('you said: y');
    // Everything in a log is history: nothing is controllable.
    expect(await page.locator('[data-testid="control"]', { hasText: 'still controllable' }).count()).toBe(0);
    expect(await page.locator('[data-testid="control"]', { hasText: 'was started' }).count()).toBeGreaterThan(
      0,
    );
    // Back to the moment the first job started: it is running there.
    const first = lines.findIndex((l) => l.includes('"type":"job.started"')) + 1;
    await page.locator('#scrub').fill(String(first));
    await page
      .getByTestId('position')
      .filter({ hasText: `fact ${first} of` })
      .waitFor();
    expect(await page.locator('.job[data-state="running"]').count()).toBe(1);
    // Play runs the timeline to its end.
    await page.locator('#play').click();
    await page
      .getByTestId('position')
      .filter({ hasText: `fact ${lines.length} of ${lines.length}` })
      .waitFor();
    expect(await page.locator('.job[data-state="running"]').count()).toBe(0);
    await page.screenshot({ path: join(ARTIFACTS, 'mirror-replay.png'), fullPage: true });
  });

  it('V2, G: after a restart the facts of the earlier runtime are shown only as history', async () => {
    const logs = [join(dir, 'first.jsonl'), join(dir, 'second.jsonl')];
    for (const [i, path] of logs.entries()) {
      const runtime = await createRuntime({ log: path, limits: { cleanupGraceMs: 200 } });
      const lease = runtime.owners.host();
      const j = await runtime.shell.background(lease.token, { command: `echo run ${i}` });
      await runtime.jobs.wait(lease.token, j.id, 10_000);
      await runtime.dispose(); // its log is complete on disk
    }
    const both = join(dir, 'both.jsonl');
    writeFileSync(both, readFileSync(logs[0]!, 'utf8') + readFileSync(logs[1]!, 'utf8'));
    mirror = await createMirror(await readFactLog(both), { replay: true });
    await open(mirror);
    await page.locator('#history .history').first().waitFor();
    expect(await page.locator('#history .history').count()).toBe(1);
    expect(await page.locator('#history').textContent()).toMatch(/was started \(history\)/);
    expect(await page.locator('#jobs .job').count()).toBe(1);
  });
});
