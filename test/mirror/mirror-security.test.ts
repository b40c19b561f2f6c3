import { readFileSync } from 'node:fs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createMirror, createRuntime, type Mirror, type Runtime } from '../../src/index.js';
import { login, readFeed } from './mirror-client.js';

let rt: Runtime;
let mirror: Mirror;
beforeEach(async () => {
  rt = await createRuntime({ limits: { cleanupGraceMs: 200 } });
  mirror = await createMirror(rt);
});
afterEach(async () => {
  await mirror.close();
  await rt.dispose();
});

const PATHS = ['/', '/app.js', '/app.css', '/machines.json', '/events'];

describe('createMirror (V4 over plain HTTP)', () => {
  it('V4: binds 127.0.0.1 by default', () => {
    expect(new URL(mirror.origin).hostname).toBe('127.0.0.1');
  });

  it('V4: every path answers 401 without the token, and to a wrong code', async () => {
    for (const path of PATHS) {
      expect((await fetch(`${mirror.origin}${path}`)).status, path).toBe(401);
      expect((await fetch(`${mirror.origin}${path}?code=nope`)).status, path).toBe(401);
    }
  });

  it('V4: the one-time code becomes an HttpOnly session cookie on a URL without it, and works once', async () => {
    const res = await fetch(mirror.url, { redirect: 'manual' });
    expect(res.status).toBe(303);
    expect(res.headers.get('location')).toBe('/'); // the secret does not stay in the address bar
    expect(res.headers.get('set-cookie')).toMatch(/HttpOnly; SameSite=Strict/);
    const cookie = res.headers.get('set-cookie')!.split(';')[0]!;
    expect(cookie).not.toContain(new URL(mirror.url).searchParams.get('code')!);
    for (const path of PATHS.slice(0, 4))
      expect((await fetch(`${mirror.origin}${path}`, { headers: { cookie } })).status).toBe(200);
    expect((await fetch(mirror.url, { redirect: 'manual' })).status).toBe(401); // spent
  });

  it('V4: no endpoint changes anything: every other method is refused, with or without the session', async () => {
    const cookie = await login(mirror);
    const lease = rt.owners.host();
    const job = await rt.shell.background(lease.token, { command: 'sleep 30' });
    for (const method of ['POST', 'PUT', 'PATCH', 'DELETE'])
      for (const path of [...PATHS, '/jobs', `/jobs/${job.id}/kill`]) {
        const res = await fetch(`${mirror.origin}${path}`, { method, headers: { cookie } });
        expect(res.status, `${method} ${path}`).toBe(405);
      }
    expect((await rt.jobs.list(lease.token))[0]).toMatchObject({ state: 'running', cancelRequested: false });
  });

  it('V4: a Content-Security-Policy that allows nothing external is on every response', async () => {
    const cookie = await login(mirror);
    for (const path of PATHS.slice(0, 4)) {
      for (const headers of [{}, { cookie }]) {
        const res = await fetch(`${mirror.origin}${path}`, { headers });
        const csp = res.headers.get('content-security-policy') ?? '';
        expect(csp).toMatch(/default-src 'none'/);
        expect(csp).not.toMatch(/https?:|\*|'unsafe-inline'|'unsafe-eval'|data:/);
        expect(res.headers.get('x-content-type-options')).toBe('nosniff');
      }
    }
  });

  it('V4: the bundled page refers to nothing outside itself', () => {
    const page = new URL('../../src/mirror/page/', import.meta.url);
    for (const file of ['index.html', 'app.js', 'app.css']) {
      const text = readFileSync(new URL(file, page), 'utf8').replaceAll("'http://www.w3.org/2000/svg'", '');
      expect(text, file).not.toMatch(/https?:\/\/|\/\/cdn|url\(|@import/);
    }
  });

  it('V2: the feed tells a running job, then its end with the exit code', async () => {
    const cookie = await login(mirror);
    const lease = rt.owners.host();
    const job = await rt.shell.background(lease.token, { command: 'echo working; exit 7' });
    const facts = await readFeed(mirror, cookie, (f) => f.type === 'job.ended');
    const mine = facts.filter((f) => f.actor === `job:${job.id}`);
    expect(mine[0]).toMatchObject({ type: 'job.started', label: 'echo working; exit 7' });
    expect(mine.at(-1)).toMatchObject({ type: 'job.ended', state: 'failed', exitCode: 7 });
  });
});
