import { readFactLog } from '../mirror/log-source.js';
import { createMirror } from '../mirror/mirror-server.js';
import { parseCommandArgs } from './cli-args.js';
import { mirrorAddress, untilSignal } from './mirror-cli.js';
import { UsageError, VIEW_USAGE } from './usage.js';
import { versionLine } from './version.js';

/**
 * `tether view <file.jsonl>` (V3): the mirror's page over a recorded log — a timeline to
 * scrub, every actor's state at that moment, the machine diagrams. No network needed.
 */
export async function viewCommand(args: readonly string[]): Promise<number> {
  const { values, positionals } = parseCommandArgs(
    'view',
    args,
    { port: { type: 'string', example: '7077' }, host: { type: 'string', example: '127.0.0.1' } },
    'rest',
  );
  if (values.help || values.version) {
    process.stdout.write(values.help ? VIEW_USAGE : versionLine());
    return 0;
  }
  const [file, ...extra] = positionals;
  if (file === undefined || extra.length > 0)
    throw new UsageError('give one log file, e.g. tether view run.jsonl', 'view');
  const address = mirrorAddress(values, 'view');
  const source = await readFactLog(file);
  const mirror = await createMirror(source, { ...address, replay: true });
  process.stdout.write(
    `tether view: open ${mirror.url} (read-only; the code in it works once)${source.skipped ? ` — ${source.skipped} lines were not facts` : ''}\nCtrl-C stops it.\n`,
  );
  await untilSignal();
  await mirror.close();
  return 0;
}
