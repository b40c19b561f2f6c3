import { mkdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { type Browser, chromium } from 'playwright-core';
import { ownCgroupDir } from './leak-cgroup.js';

/** Debian's `chromium` package (.ci/run installs it); no browser is downloaded. */
export const CHROMIUM = process.env.TETHER_CHROMIUM ?? '/usr/bin/chromium';

/** A headless Chromium that one test file shares, with what ends it. */
export interface SharedBrowser {
  readonly browser: Browser;
  /** Closes the browser and waits until none of its processes is left. */
  close(): Promise<void>;
}

/**
 * Launches one headless Chromium for a test file (`beforeAll`) and moves its processes out of
 * the per-test leak cgroup (test/support/setup.ts) into a sibling cgroup this helper owns:
 * the browser outlives each test by design, and `close()` (`afterAll`) ends it and checks
 * that cgroup is empty before removing it. Without a writable cgroup it just launches.
 *
 * @example
 * ```ts
 * let shared: SharedBrowser;
 * beforeAll(async () => { shared = await launchSharedBrowser(); });
 * afterAll(() => shared.close());
 * ```
 */
export async function launchSharedBrowser(): Promise<SharedBrowser> {
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
  });
  const own = ownCgroup();
  let home: string | null = null;
  if (own !== null && /vitest-\d+$/.test(own)) {
    home = `${own}-browser`;
    mkdirSync(home, { recursive: true });
    for (const pid of pids(own))
      if (pid !== process.pid) writeFileSync(join(home, 'cgroup.procs'), String(pid));
  }
  return {
    browser,
    async close() {
      await browser.close();
      if (home === null) return;
      for (let i = 0; i < 100 && pids(home).length > 0; i++) await new Promise((r) => setTimeout(r, 20));
      const left = pids(home);
      if (left.length > 0) writeFileSync(join(home, 'cgroup.kill'), '1');
      for (let i = 0; i < 100 && pids(home).length > 0; i++) await new Promise((r) => setTimeout(r, 20));
      rmdirSync(home);
      if (left.length > 0) throw new Error(`the browser left processes after close: ${left.join(', ')}`);
    },
  };
}

// This process's cgroup, when its parent is writable-looking (readable procs): the sibling goes there.
function ownCgroup(): string | null {
  const dir = ownCgroupDir();
  if (dir === null) return null;
  try {
    readFileSync(join(dirname(dir), 'cgroup.procs'));
    return dir;
  } catch {
    return null;
  }
}

function pids(dir: string): number[] {
  try {
    return readFileSync(join(dir, 'cgroup.procs'), 'utf8')
      .split('\n')
      .filter((l) => l !== '')
      .map(Number);
  } catch {
    return [];
  }
}
