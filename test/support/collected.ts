import { setImmediate as nextTurn } from 'node:timers/promises';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

/**
 * Full collections until `ref` is cleared, at most `rounds` times: whether what it points to
 * was unreachable. A WeakRef is cleared only after the turn that made it unreachable, so each
 * collection runs in a turn of its own.
 *
 * @example
 * ```ts
 * expect(await collected(new WeakRef(service))).toBe(true);
 * ```
 */
export async function collected(ref: WeakRef<object>, rounds = 10): Promise<boolean> {
  for (let i = 0; i < rounds && ref.deref() !== undefined; i++) {
    await nextTurn();
    gc();
  }
  return ref.deref() === undefined;
}
