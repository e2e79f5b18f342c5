/**
 * How long test files take, each run alone by the node test runner: its wall time from the TAP
 * reporter's `duration_ms` for the file. With `--base <dir>` (another checkout of this repo, say
 * the commit before a change, with node_modules and dist/), each file runs there and here back to
 * back, so the two figures of a row share the machine's load of that moment.
 *
 * Usage: `node --import tsx bench/test-times.ts [--base <dir>] test/<room>/<file>.test.ts...`
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const here = fileURLToPath(new URL('../', import.meta.url));

/** The file's duration in seconds as the runner reports it, and whether every test passed. */
function timeFile(root: string, file: string): Promise<{ seconds: number; ok: boolean }> {
  const child = spawn(process.execPath, ['--import', 'tsx', '--test', '--test-reporter=tap', file], {
    cwd: root,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let tap = '';
  child.stdout.on('data', (chunk: Buffer) => (tap += chunk.toString()));
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code) => {
      // The run's own summary comes last: `# duration_ms 1234.5`.
      const total = /^# duration_ms ([\d.]+)$/m.exec(tap);
      // What failed, so a failure in a timing run is not lost.
      for (const failed of tap.matchAll(/^\s*not ok [\s\S]*?^\s*\.\.\.$/gm))
        process.stderr.write(`${file}: ${failed[0]}\n`);
      resolve({ seconds: Number(total?.[1] ?? NaN) / 1000, ok: code === 0 });
    });
  });
}

const args = process.argv.slice(2);
const baseAt = args.indexOf('--base');
const base = baseAt === -1 ? null : (args.splice(baseAt, 2)[1] ?? null);
const shown = (run: { seconds: number; ok: boolean }): string =>
  `${run.seconds.toFixed(1)}${run.ok ? '' : ' (failed)'}`;

console.log(base === null ? '| file | s |\n| --- | ---: |' : '| file | before s | after s |\n| --- | ---: | ---: |');
for (const file of args) {
  const before = base === null ? null : await timeFile(base, file);
  const after = await timeFile(here, file);
  console.log(before === null ? `| ${file} | ${shown(after)} |` : `| ${file} | ${shown(before)} | ${shown(after)} |`);
}
