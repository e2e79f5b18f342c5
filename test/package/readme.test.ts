/**
 * Every code block in README.md runs as written, as a newcomer would run it
 * after the README's set-up (`npm ci`, which builds dist/, and `npm start`):
 * `js` blocks with plain node twice: from a file inside this package, where
 * `import ... from 'telha/client'` resolves the package by its own name to the
 * build, and from a separate project that installed the packed package as the
 * README says (`npm pack`, then `npm install <tarball>`); `sh` blocks with `sh -e` in the package root, where `npx telha` finds
 * the CLI; `toml` blocks are loaded as configuration files. The blocks run
 * from the separate project talk to one live test server, those run as written
 * (in README order, as a newcomer would) to another, named by `TELHA_ADDRESS`;
 * the engine's blocks open their store where `TELHA_STORAGE__PATH` says.
 *
 * A block the test must not run (the set-up itself) is preceded by a line
 * `<!-- readme-test: skip (why) -->`. A block in any other language fails
 * the test until it is taught how to run it.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { loadConfig } from '../../src/open.ts';
import { tempDir } from '../support/backends.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const exec = promisify(execFile);

export interface CodeBlock {
  /** The line of the opening fence, 1-based. */
  readonly line: number;
  readonly lang: string;
  readonly code: string;
  /** Why the test leaves it alone, if it is marked so. */
  readonly skip: string | null;
}

/** The fenced code blocks of a Markdown text, with the skip marker on the line before each (blank lines aside). */
export function codeBlocks(markdown: string): CodeBlock[] {
  const lines = markdown.split('\n');
  const blocks: CodeBlock[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^```(\S*)\s*$/.exec(lines[i] as string);
    if (open === null) continue;
    const close = lines.indexOf('```', i + 1);
    assert.ok(close > i, `README.md:${i + 1}: a code block that never closes`);
    let before = i - 1;
    while (before >= 0 && (lines[before] as string).trim() === '') before--;
    const marker = /^<!-- readme-test: skip \((.+)\) -->$/.exec(lines[before] ?? '');
    blocks.push({
      line: i + 1,
      lang: open[1] ?? '',
      code: lines.slice(i + 1, close).join('\n'),
      skip: marker?.[1] ?? null,
    });
    i = close;
  }
  return blocks;
}

const blocks = codeBlocks(readFileSync(join(ROOT, 'README.md'), 'utf8'));
/**
 * A guard against a block that hangs, not a measure of speed: the block of seven `npx telha`
 * calls took over 60 s on a 2-core machine shared with three other test runs.
 */
const BLOCK_TIMEOUT_MS = 180_000;

// Two groups that share nothing run side by side: the packed package's install (most of the
// first group's time) goes on while the blocks run as written. Within each, blocks run in order.
describe('README.md', { concurrency: true }, () => {
  it('has code blocks to run, and skips only the set-up and what needs more than telha', () => {
    assert.ok(blocks.filter((b) => b.skip === null).length >= 4);
    assert.deepEqual(
      blocks.filter((b) => b.skip !== null).map((b) => /^npm \S+/.exec(b.code)?.[0] ?? b.skip),
      [
        'npm ci',
        'npm start',
        'npm pack',
        'needs @opentelemetry/sdk-trace-base, which telha does not install',
        'needs a PostgreSQL server of your own',
      ],
    );
  });

  it('opens with a quick start and a table of contents whose links all lead to a heading', () => {
    const text = readFileSync(join(ROOT, 'README.md'), 'utf8');
    const headings = [...text.matchAll(/^#{2,3} (.+)$/gm)].map((m) =>
      (m[1] as string)
        .toLowerCase()
        .replace(/[^a-z0-9 -]/g, '')
        .replace(/ /g, '-'),
    );
    assert.equal(headings[0], 'quick-start');
    const contents = /^\*\*Contents:\*\*([\s\S]*?)\n\n/m.exec(text)?.[1] ?? '';
    const links = [...text.matchAll(/\]\(#([^)]+)\)/g)].map((m) => m[1]);
    assert.ok(contents.split('](#').length > 10, 'a table of contents');
    assert.deepEqual(
      links.filter((link) => !headings.includes(link as string)),
      [],
    );
  });

  it('lists exactly two commands under Two commands', () => {
    const two = blocks.find((b) => b.code.startsWith('npm start   # telha serve'));
    assert.deepEqual(
      two?.code.split('\n').map((line) => line.split('#')[0]?.trim()),
      ['npm start', 'npm test'],
    );
  });

  describe('from a separate project that installed the packed package', { concurrency: false }, () => {
    let server: TestServer;
    /** A project of a user's, outside the checkout, with the packed package installed. */
    const project = tempDir('telha-readme-project-');
    const dirs: string[] = [project];

    before(async () => {
      assertBuilt();
      server = await startTestServer();
      await installPacked(project);
    });
    after(async () => {
      await server.close();
      for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
    });

    for (const block of blocks.filter((b) => b.skip === null && b.lang === 'js')) {
      it(`runs the js block at line ${block.line} from a separate project that installed the packed package`, async () => {
        const file = join(project, `block-${block.line}.mjs`);
        writeFileSync(file, block.code);
        const storage = tempDir('telha-readme-');
        dirs.push(storage);
        await exec(process.execPath, [file], {
          cwd: project,
          env: { ...process.env, TELHA_ADDRESS: server.address, TELHA_STORAGE__PATH: storage },
          timeout: BLOCK_TIMEOUT_MS,
        });
      });
    }
  });

  describe('as written', { concurrency: false }, () => {
    let server: TestServer;
    /** Inside the package, so its files import `telha` by name (a package may import itself through its exports). */
    const scratch = join(ROOT, '.tmp', `readme-${process.pid}`);
    const dirs: string[] = [];

    before(async () => {
      assertBuilt();
      server = await startTestServer();
      mkdirSync(scratch, { recursive: true });
    });
    after(async () => {
      await server.close();
      rmSync(scratch, { recursive: true, force: true });
      for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
    });

    for (const block of blocks.filter((b) => b.skip === null)) {
      it(`runs the ${block.lang} block at line ${block.line} as written`, async () => {
        const storage = tempDir('telha-readme-');
        dirs.push(storage);
        const env = { ...process.env, TELHA_ADDRESS: server.address, TELHA_STORAGE__PATH: storage };
        const options = { cwd: ROOT, env, timeout: BLOCK_TIMEOUT_MS };
        switch (block.lang) {
          case 'js': {
            const file = join(scratch, `block-${block.line}.mjs`);
            writeFileSync(file, block.code);
            await exec(process.execPath, [file], options);
            break;
          }
          case 'sh': {
            // Set-up commands would reinstall this checkout under the running tests, or run them again.
            assert.doesNotMatch(
              block.code,
              /\bnpm (ci|install|i|test|start)\b/,
              `README.md:${block.line}: a set-up block: mark it <!-- readme-test: skip (why) --> instead`,
            );
            const { stdout } = await exec('sh', ['-e', '-c', block.code], options);
            assertShellOutput(block.code, stdout);
            break;
          }
          case 'toml': {
            const file = join(storage, 'telha.toml');
            writeFileSync(file, block.code);
            await loadConfig({ file });
            break;
          }
          case 'yaml': {
            // Alert rules: every Telha metric they name is one the server exports.
            const exported = await (await fetch(`${server.http}/metrics`)).text();
            const named = new Set(block.code.match(/\btelha_[a-z_]+/g) ?? []);
            assert.ok(named.size > 0, `README.md:${block.line}: a yaml block that names no metric`);
            for (const name of named) {
              const family = name.replace(/_(bucket|count|sum)$/, '');
              assert.match(
                exported,
                new RegExp(`^# TYPE ${family} `, 'm'),
                `README.md:${block.line}: ${name} is not exported`,
              );
            }
            break;
          }
          default:
            assert.fail(
              `README.md:${block.line}: no way to run a \`${block.lang}\` block; teach test/package/readme.test.ts one`,
            );
        }
      });
    }
  });
});

function assertBuilt(): void {
  assert.ok(
    existsSync(join(ROOT, 'dist/client/index.js')),
    'dist/ is missing: npm ci builds it (prepare), and npm test builds it before the tests',
  );
}

/**
 * What the README tells a user to do: `npm pack` in the checkout (its `prepare` leaves an
 * up-to-date dist/ as it is), then `npm install <tarball>` in their project. The dependencies
 * come from npm's cache, which `npm ci` filled.
 */
async function installPacked(project: string): Promise<void> {
  const { stdout } = await exec('npm', ['pack', '--json', '--silent', '--pack-destination', project], { cwd: ROOT });
  const [packed] = JSON.parse(stdout) as [{ filename: string }];
  writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'my-app', private: true }));
  await exec(
    'npm',
    ['install', '--prefer-offline', '--no-audit', '--no-fund', '--silent', join(project, packed.filename)],
    { cwd: project },
  );
}

/**
 * What the operators' block prints: ids, a lifecycle, a table, a count, and JSON with nothing
 * before it; the schedules block, the schedule it made and paused, in the list; the pauses
 * block, the pause it made in the list; the limits block, the limit it set in the list.
 */
function assertShellOutput(code: string, stdout: string): void {
  if (code.includes('npx telha pause')) {
    assert.match(stdout, /^acme\s+email:\s/m, 'the pause in the list');
    return;
  }
  if (code.includes('npx telha limits')) {
    assert.match(stdout, /^email\s+5\s+0\s+100\/1s\s/m, 'the limit in the list');
    return;
  }
  if (code.includes('npx telha schedules')) {
    assert.match(stdout, /^\s+state\s+paused$/m, 'the pause');
    assert.match(stdout, /^acme\s+nightly-report\s+0 2 \* \* \* Europe\/Berlin\s+report\s+active/m, 'the list');
    return;
  }
  if (code.includes('npx telha jobs run-now')) {
    assert.match(stdout, /^ready [0-9a-f-]{36}: pending, attempts 0$/m, 'the delayed job made ready');
    assert.match(stdout, /^discarded \d+ of \d+ dead jobs$/m, 'the discard by filter');
    return;
  }
  if (code.includes('npx telha export')) {
    assert.match(stdout, /^imported \d+ jobs?\b/m, 'the import of what the export wrote');
    return;
  }
  if (code.includes('npx telha backup')) {
    assert.match(stdout, /^backed up \d+ jobs \(\d+ rows\) to \S+/m, 'the backup');
    assert.match(stdout, /^restored \d+ jobs to \S+/m, 'the restore');
    return;
  }
  if (!code.includes('npx telha')) return;
  assert.match(stdout, /^[0-9a-f-]{36}$/m, 'an enqueued job id');
  assert.match(stdout, /^state\s+pending, gated until .* \(delay\)/m);
  assert.match(stdout, /^retried \d+ of \d+ dead jobs$/m);
  const json = stdout.slice(stdout.lastIndexOf('\n[') + 1);
  assert.ok(Array.isArray(JSON.parse(json)), 'counts --json ends the output as JSON');
}
