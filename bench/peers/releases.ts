/**
 * Which release of a peer a run uses. The newest pg-boss (12) and
 * graphile-worker (0.18) need Node 22 or later, so package.json installs each
 * beside the newest release that still runs on Node 20, the newest under an
 * npm alias (`pg-boss-12`), and every run takes the newest release whose
 * `engines.node` admits the Node it runs on. Telha and every peer in one
 * table therefore always share one Node: on 24 the newest peers, on 20 the
 * ones before.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

export interface InstalledPackage {
  /** The folder under node_modules: the package's name, or the npm alias it is installed under. */
  readonly installedAs: string;
  readonly version: string;
  /** The package's `engines.node`; absent when it states none. */
  readonly engines?: string;
}

/** A package as installed in node_modules; null when it is not installed. */
export function installedPackage(installedAs: string): InstalledPackage | null {
  let json: { version?: string; engines?: { node?: string } };
  try {
    json = JSON.parse(
      readFileSync(path.join(ROOT, 'node_modules', installedAs, 'package.json'), 'utf8'),
    ) as typeof json;
  } catch {
    return null;
  }
  const engines = json.engines?.node;
  return { installedAs, version: json.version ?? '?', ...(engines === undefined ? {} : { engines }) };
}

/** `22.12.0` → [22, 12, 0]; missing parts are 0. */
function parts(version: string): [number, number, number] {
  const [major = 0, minor = 0, patch = 0] = version.replace(/^v/, '').split('.').map(Number);
  return [major, minor, patch];
}

/**
 * Whether an `engines.node` range admits a Node version. Only the forms the
 * peers use: alternatives joined by `||`, each `>=x[.y[.z]]`; anything else
 * is refused by name rather than guessed at.
 */
export function admits(range: string, version: string): boolean {
  const [major, minor, patch] = parts(version);
  return range.split('||').some((alternative) => {
    const bound = /^>=\s*(\d+(?:\.\d+){0,2})$/.exec(alternative.trim())?.[1];
    if (bound === undefined)
      throw new Error(`engines.node range "${range}": only ">=x.y.z" alternatives are understood`);
    const [a, b, c] = parts(bound);
    return major !== a ? major > a : minor !== b ? minor > b : patch >= c;
  });
}

export interface Release<T> extends InstalledPackage {
  /** What the adapter does with this release (its binding). */
  readonly use: T;
}

/**
 * The first installed candidate whose `engines.node` admits `node` (the
 * running Node by default). List candidates newest first.
 */
export function newestRunnable<T>(
  candidates: readonly { readonly installedAs: string; readonly use: T }[],
  node: string = process.versions.node,
): Release<T> {
  for (const candidate of candidates) {
    const installed = installedPackage(candidate.installedAs);
    if (installed !== null && (installed.engines === undefined || admits(installed.engines, node)))
      return { ...installed, use: candidate.use };
  }
  const names = candidates.map((c) => c.installedAs).join(', ');
  throw new Error(`none of ${names} is installed with an engines.node range that admits Node ${node}`);
}
