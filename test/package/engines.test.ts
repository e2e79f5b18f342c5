/**
 * Every runtime dependency `npm ci` installs supports every Node release line `package.json`
 * names: one that does not is a latent break (cookie@2 wants Node >= 22 and is ESM only, where
 * Node 20 before 20.19 cannot `require` it).
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import semver from 'semver';

interface LockedPackage {
  readonly version?: string;
  readonly dev?: boolean;
  readonly optional?: boolean;
  readonly engines?: { readonly node?: string };
}

const root = new URL('../../', import.meta.url);
const manifest = JSON.parse(readFileSync(new URL('package.json', root), 'utf8')) as { engines: { node: string } };
const lock = JSON.parse(readFileSync(new URL('package-lock.json', root), 'utf8')) as {
  packages: Record<string, LockedPackage>;
};

/** The oldest release of each line we support: `^20.9.0 || ^22.11.0` gives 20.9.0 and 22.11.0. */
const oldestSupported = manifest.engines.node.split('||').map((range) => semver.minVersion(range.trim())?.version);

describe('engines', () => {
  it('names the oldest release of each supported Node line', () => {
    assert.deepEqual(oldestSupported, ['20.9.0', '22.11.0', '24.11.0']);
  });

  it('installs no runtime dependency that refuses a Node release we support', () => {
    const refusing = Object.entries(lock.packages)
      .filter(([path, locked]) => path !== '' && locked.dev !== true && locked.engines?.node !== undefined)
      .flatMap(([path, locked]) =>
        oldestSupported
          .filter((node) => node !== undefined && !semver.satisfies(node, locked.engines?.node ?? '*'))
          .map(
            (node) =>
              `${path.replace(/^.*node_modules\//, '')}@${locked.version} (node ${locked.engines?.node}) refuses ${node}`,
          ),
      );
    assert.deepEqual(refusing, []);
  });
});
