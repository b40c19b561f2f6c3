import type { Mirror } from '../../src/index.js';

/** Spends the mirror's one-time code as a browser would and returns the session cookie. */
export async function login(mirror: Mirror): Promise<string> {
  const res = await fetch(mirror.url, { redirect: 'manual' });
  const cookie = res.headers.get('set-cookie');
  if (res.status !== 303 || cookie === null) throw new Error(`login failed: ${res.status}`);
  return cookie.split(';')[0]!;
}

/** Reads the SSE feed until a fact matches `until`; returns every fact seen. */
export async function readFeed(
  mirror: Mirror,
  cookie: string,
  until: (fact: Record<string, unknown>) => boolean,
): Promise<Record<string, unknown>[]> {
  const controller = new AbortController();
  const res = await fetch(`${mirror.origin}/events`, { headers: { cookie }, signal: controller.signal });
  const seen: Record<string, unknown>[] = [];
  const decoder = new TextDecoder();
  let buffer = '';
  try {
    for await (const chunk of res.body!) {
      buffer += decoder.decode(chunk as Uint8Array, { stream: true });
      let end = buffer.indexOf('\n\n');
      while (end >= 0) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        end = buffer.indexOf('\n\n');
        const data = block.split('\n').find((l) => l.startsWith('data: '));
        if (block.startsWith('event:') || data === undefined) continue;
        const fact = JSON.parse(data.slice(6)) as Record<string, unknown>;
        seen.push(fact);
        if (until(fact)) return seen;
      }
    }
    return seen;
  } finally {
    controller.abort();
  }
}
