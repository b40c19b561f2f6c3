import { setTimeout as pause } from 'node:timers/promises';

/**
 * A bounded poll for a fact (never a timed assertion: the bound only turns a hang into a
 * failure): `probe` every 10 ms until `ok`, for at most `ms`.
 */
export async function until<T>(
  what: string,
  probe: () => T | Promise<T>,
  ok: (v: T) => boolean,
  ms = 30_000,
): Promise<T> {
  const end = Date.now() + ms;
  let last = await probe();
  while (!ok(last) && Date.now() < end) {
    await pause(10);
    last = await probe();
  }
  if (!ok(last)) throw new Error(`${what} never happened; last: ${JSON.stringify(last)}`);
  return last;
}

/** The lines of a numbered stream so far, and a wait for one line. */
export function lines(stream: NodeJS.ReadableStream) {
  let text = '';
  stream.setEncoding('utf8');
  stream.on('data', (chunk: string) => {
    text += chunk;
  });
  return {
    get text() {
      return text;
    },
    until: (line: string) =>
      until(
        `line ${line}`,
        () => text,
        (t) => t.split('\n').includes(line),
      ),
  };
}
