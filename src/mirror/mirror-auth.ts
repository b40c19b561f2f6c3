import { randomBytes, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';

const COOKIE = 'tether_mirror';

/** What a request proved: a session cookie, the one-time code (to be exchanged), or nothing. */
export type Credential = 'session' | 'code' | 'none';

/**
 * V4: the mirror's per-start secrets. The printed URL carries a one-time `code`; the first
 * request with it gets a session cookie (HttpOnly, SameSite=Strict) and a redirect to a URL
 * without it, so the code that lands in terminal scrollback or a proxy log opens nothing twice.
 *
 * @example
 * ```ts
 * const auth = new MirrorAuth();
 * const url = `http://127.0.0.1:${port}/?code=${auth.code}`;
 * ```
 */
export class MirrorAuth {
  readonly code = randomBytes(18).toString('base64url');
  readonly #session = randomBytes(24).toString('base64url');
  #codeUsed = false;

  /** What `req` carries; a valid code is consumed by this call. */
  check(req: IncomingMessage, url: URL): Credential {
    const cookie = parseCookie(req.headers.cookie ?? '')[COOKIE];
    if (cookie !== undefined && same(cookie, this.#session)) return 'session';
    const code = url.searchParams.get('code');
    if (code !== null && !this.#codeUsed && same(code, this.code)) {
      this.#codeUsed = true;
      return 'code';
    }
    return 'none';
  }

  /** The `Set-Cookie` header of the session. */
  sessionCookie(): string {
    return `${COOKIE}=${this.#session}; HttpOnly; SameSite=Strict; Path=/`;
  }
}

function same(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

function parseCookie(header: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0) out[part.slice(0, eq).trim()] = part.slice(eq + 1).trim();
  }
  return out;
}
