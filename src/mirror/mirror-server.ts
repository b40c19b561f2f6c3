import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { TetherError } from '../errors.js';
import type { Fact } from '../observe/fact-types.js';
import { drawMachines } from './machine-graphs.js';
import { MirrorAuth } from './mirror-auth.js';
import type { FactSource, Mirror, MirrorOptions } from './mirror-types.js';
import { pageAsset } from './page-assets.js';

/** Bytes a slow browser may have pending on its feed before facts are dropped for it. */
export const FEED_PENDING_BYTES = 1024 * 1024;

// V4: the page may load only what this server serves; nothing external, no inline script.
const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'Content-Security-Policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
  'Cache-Control': 'no-store',
  'X-Frame-Options': 'DENY',
};

/**
 * V2: the read-only web mirror — a small `node:http` server with the bundled page, the machine
 * diagrams and a live feed of facts (server-sent events). The runtime pays for nothing while
 * nobody watches: a feed subscribes (with samples of job output and terminal screens) only
 * while a browser holds it open. V4: loopback by default, a one-time code that becomes a
 * session cookie, GET only, and a Content-Security-Policy that allows nothing external.
 *
 * @example
 * ```ts
 * const rt = await createRuntime();
 * const mirror = await createMirror(rt, { port: 7077 });
 * console.log(`open ${mirror.url}`);
 * await mirror.close();
 * ```
 */
export async function createMirror(source: FactSource, options: MirrorOptions = {}): Promise<Mirror> {
  if (typeof source?.observe !== 'function')
    throw new TetherError(
      'INVALID_ARGUMENT',
      'createMirror(source) takes a runtime (or a log source from readFactLog)',
    );
  const host = options.host ?? '127.0.0.1';
  const port = options.port ?? 0;
  if (!Number.isInteger(port) || port < 0 || port > 65535)
    throw new TetherError('INVALID_ARGUMENT', `mirror port must be an integer 0..65535, got ${String(port)}`);
  const replay = options.replay === true;
  const auth = new MirrorAuth();
  const feeds = new Set<() => void>();
  let machines: string | undefined;

  const server = createServer((req, res) => {
    for (const [name, value] of Object.entries(SECURITY_HEADERS)) res.setHeader(name, value);
    const url = new URL(req.url ?? '/', 'http://mirror.invalid');
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res
        .writeHead(405, { Allow: 'GET, HEAD', 'Content-Type': 'text/plain' })
        .end('the mirror is read-only\n');
      return;
    }
    const credential = auth.check(req, url);
    if (credential === 'code') {
      // The code is spent; the browser continues on a URL without it.
      res.writeHead(303, { Location: '/', 'Set-Cookie': auth.sessionCookie() }).end();
      return;
    }
    if (credential === 'none') {
      res
        .writeHead(401, { 'Content-Type': 'text/plain; charset=utf-8' })
        .end('open the URL tether printed when the mirror started (its code works once)\n');
      return;
    }
    if (url.pathname === '/events') return feed(req, res);
    if (url.pathname === '/machines.json') {
      machines ??= JSON.stringify(drawMachines());
      res.writeHead(200, { 'Content-Type': 'application/json' }).end(machines);
      return;
    }
    const asset = pageAsset(url.pathname);
    if (asset === null) {
      res.writeHead(404, { 'Content-Type': 'text/plain' }).end('not found\n');
      return;
    }
    res.writeHead(200, { 'Content-Type': asset.type }).end(asset.body);
  });

  // One browser's live feed: the recent facts, then each new one, until it goes away.
  const feed = (req: IncomingMessage, res: ServerResponse): void => {
    res.writeHead(200, { 'Content-Type': 'text/event-stream', Connection: 'keep-alive' });
    res.write(`event: hello\ndata: ${JSON.stringify({ mode: replay ? 'replay' : 'live' })}\n\n`);
    let dropped = 0;
    const send = (fact: Fact | { readonly type: 'mirror.dropped'; readonly dropped: number }): void => {
      // A replay sends a file already in memory; a live feed drops past the bound (and says so).
      if (!replay && res.writableLength > FEED_PENDING_BYTES) {
        dropped++;
        return;
      }
      res.write(`data: ${JSON.stringify(fact)}\n\n`);
    };
    res.on('drain', () => {
      if (dropped === 0) return;
      send({ type: 'mirror.dropped', dropped });
      dropped = 0;
    });
    const stop = source.observe(send, { replay: true, samples: true });
    if (replay) res.write('event: end\ndata: {}\n\n');
    const end = (): void => {
      stop();
      feeds.delete(end);
      res.end();
    };
    feeds.add(end);
    req.on('close', end);
  };

  await new Promise<void>((resolve, reject) => {
    server.once('error', (error) =>
      reject(
        new TetherError('INVALID_ARGUMENT', `the mirror cannot listen on ${host}:${port} (${error.message})`),
      ),
    );
    server.listen(port, host, () => resolve());
  });
  const address = server.address() as AddressInfo;
  const origin = `http://${address.family === 'IPv6' ? `[${address.address}]` : address.address}:${address.port}`;
  let closing: Promise<void> | undefined;
  return {
    origin,
    url: `${origin}/?code=${auth.code}`,
    close() {
      closing ??= new Promise<void>((resolve) => {
        for (const end of [...feeds]) end();
        server.close(() => resolve());
        server.closeAllConnections();
      });
      return closing;
    },
  };
}
