import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createRuntime, type Runtime } from '../../src/index.js';

let ws: string;
let rt: Runtime;
let server: Server;
let port: number;
let connections: number;

beforeEach(async () => {
  ws = mkdtempSync(join(tmpdir(), 'tether-sbx-net-'));
  rt = await createRuntime({ cwd: ws, spillDir: false, limits: { cleanupGraceMs: 300, drainMs: 200 } });
  connections = 0;
  server = createServer((socket) => {
    connections++;
    socket.end('hello from the host\n');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as { port: number }).port;
});

afterEach(async () => {
  await rt.dispose();
  await new Promise((resolve) => server.close(resolve));
  rmSync(ws, { recursive: true, force: true });
});

// bash's /dev/tcp: connect, print what the server sent.
const connect = () => `exec 3<>/dev/tcp/127.0.0.1/${port} && cat <&3`;

describe('sandbox: the network (A3)', () => {
  it("A3: with network 'none' a loopback server of the host is unreachable", async () => {
    const lease = rt.owners.host({ sandbox: { mode: 'workspace-write' } });
    const r = await rt.shell.run({ owner: lease.token, command: connect() });
    expect(r.exitCode).not.toBe(0);
    expect(r.output).toMatch(/Connection refused|Network is unreachable/);
    expect(r.output).not.toContain('hello from the host');
    expect(r.sandbox?.network).toBe('none');
    expect(connections).toBe(0);
  });

  it("A3: with network 'host' the same server is reachable (and the filesystem still sandboxed)", async () => {
    const lease = rt.owners.host({ sandbox: { mode: 'workspace-write', network: 'host' } });
    const r = await rt.shell.run({ owner: lease.token, command: `${connect()}; touch /etc/x 2>&1` });
    expect(r.output).toContain('hello from the host');
    expect(r.output).toContain('Read-only file system');
    expect(connections).toBe(1);
  });

  it('A3: an unsandboxed owner of the same runtime reaches it too (the baseline)', async () => {
    const r = await rt.shell.run({ command: connect() });
    expect(r).toMatchObject({ exitCode: 0, output: 'hello from the host\n' });
    expect(r.sandbox).toBeUndefined();
  });
});
