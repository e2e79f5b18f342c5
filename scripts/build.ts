/**
 * `npm run build` and `prepare`: compile `src/` into `dist/` without ever leaving a missing or
 * half-written `dist/` for a program that is using it.
 *
 * `prepare` runs on every `npm ci`, `npm pack` and, through `npx telha` (which installs this
 * checkout into npm's cache as a linked package), on every first `npx` call. It used to be
 * `rm -rf dist && compile`: 17-23 s with no `dist/` at all, which broke a test run using it.
 * Now an up-to-date `dist/` is left as it is (a stamp newer than every source), and a new
 * build is written beside it and renamed into place.
 *
 * Usage: `node --import tsx scripts/build.ts [--force]`.
 */
import { execFileSync } from 'node:child_process';
import {
  chmodSync,
  cpSync,
  existsSync,
  readdirSync,
  renameSync,
  rmSync,
  statSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = fileURLToPath(new URL('../', import.meta.url));
const dist = join(root, 'dist');
/** Written last into a finished build: its time is when the build's sources were read. */
const STAMP = '.built';
/** What a build reads besides `src/`. */
const INPUTS = ['package.json', 'tsconfig.json', 'tsconfig.build.json'];

/** The newest modification time (ms) under `path`. */
function newest(path: string): number {
  const stat = statSync(path);
  if (!stat.isDirectory()) return stat.mtimeMs;
  return readdirSync(path).reduce((latest, name) => Math.max(latest, newest(join(path, name))), stat.mtimeMs);
}

/** Whether `dist/` is a finished build of the sources as they are now. */
export function upToDate(): boolean {
  const stamp = join(dist, STAMP);
  if (!existsSync(stamp)) return false;
  const sources = Math.max(newest(join(root, 'src')), ...INPUTS.map((file) => newest(join(root, file))));
  return statSync(stamp).mtimeMs >= sources;
}

/** Compile into a folder beside `dist/`, then swap it in: two renames, microseconds apart. */
export function build(): void {
  const next = join(root, `dist.next-${process.pid}`);
  const old = join(root, `dist.old-${process.pid}`);
  rmSync(next, { recursive: true, force: true });
  const started = Date.now();
  try {
    const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc');
    execFileSync(process.execPath, [tsc, '-p', join(root, 'tsconfig.build.json'), '--outDir', next], {
      stdio: 'inherit',
    });
    cpSync(join(root, 'src', 'http', 'assets'), join(next, 'http', 'assets'), { recursive: true });
    chmodSync(join(next, 'cli', 'main.js'), 0o755);
    // Dated from before tsc read the sources: a source saved while it compiled makes the build outdated.
    writeFileSync(join(next, STAMP), '');
    utimesSync(join(next, STAMP), new Date(started), new Date(started));
  } catch (error) {
    rmSync(next, { recursive: true, force: true });
    throw error;
  }
  if (existsSync(dist)) renameSync(dist, old);
  renameSync(next, dist);
  rmSync(old, { recursive: true, force: true });
}

// Run as a script; imported (by the tests' `builtCli`), it only lends these functions.
if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  if (process.argv.includes('--force') || !upToDate()) build();
}
