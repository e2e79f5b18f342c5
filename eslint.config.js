// @ts-check
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

/** Imports a layer may not make; keeps the layering of docs/architecture.md true. */
const layer = (files, forbidden, message) => ({
  files,
  rules: {
    'no-restricted-imports': ['error', { patterns: forbidden.map((group) => ({ group: [group], message })) }],
  },
});

export default tseslint.config(
  {
    ignores: [
      'dist/',
      'dist.*/',
      'node_modules/',
      'telha-data/',
      '.tmp/',
      'eslint.config.js',
      '.dependency-cruiser.cjs',
      'src/gen/',
      'test/support/record-loads.mjs',
      // A browser script, checked by the browser test rather than the type-aware rules.
      'src/http/assets/',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': [
        'error',
        {
          // node:test's describe/it return promises the runner itself awaits.
          allowForKnownSafeCalls: [
            {
              from: 'package',
              package: 'node:test',
              name: ['describe', 'it', 'test', 'before', 'after', 'beforeEach', 'afterEach'],
            },
          ],
        },
      ],
      '@typescript-eslint/switch-exhaustiveness-check': 'error',
      '@typescript-eslint/consistent-type-imports': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_' }],
      'no-restricted-syntax': [
        'error',
        { selector: 'ExportAllDeclaration', message: 'Name every export (no export *).' },
      ],
    },
  },
  layer(
    ['src/core/**'],
    [
      '**/codec/**',
      '**/storage/**',
      '**/engine/**',
      '**/server/**',
      '**/client/**',
      '**/cli/**',
      '**/util/**',
      'node:fs*',
      'node:net',
      'node:child_process',
      'node:crypto',
    ],
    "core/ holds the queue's meaning and does no I/O: it imports nothing outside core/.",
  ),
  layer(
    ['src/util/**'],
    [
      '**/core/**',
      '**/codec/**',
      '**/storage/**',
      '**/engine/**',
      '**/server/**',
      '**/http/**',
      '**/client/**',
      '**/cli/**',
      '**/worker/**',
      '**/wire/**',
      '**/gen/**',
    ],
    'util/ holds small helpers that know nothing of the queue: it imports nothing of ours.',
  ),
  layer(
    ['src/codec/**'],
    ['**/storage/**', '**/engine/**', '**/server/**', '**/client/**', '**/cli/**'],
    'codec/ may import only core/.',
  ),
  layer(
    ['src/storage/**'],
    ['**/engine/**', '**/server/**', '**/client/**', '**/cli/**'],
    'storage/ may import only core/ and codec/.',
  ),
  layer(
    ['src/engine/**'],
    [
      '**/server/**',
      '**/client/**',
      '**/cli/**',
      '**/storage/rocksdb/**',
      '**/storage/postgres/**',
      '**/storage/memory/**',
      '**/open.ts',
    ],
    'engine/ may not import the server, client or CLI, and knows the storage seam (storage/types.ts), never a backend.',
  ),
  layer(
    ['src/server/**', 'src/cli/**'],
    ['**/storage/**', '**/codec/**'],
    'the server and the CLI work through the engine (and src/open.ts), never the storage or codec layers.',
  ),
  layer(
    ['src/http/**'],
    ['**/storage/**', '**/codec/**', '**/client/**', '**/cli/**', '**/open.ts'],
    'the HTTP side works through the engine (and server/auth.ts, server/status.ts), never the storage or codec layers.',
  ),
  layer(
    ['src/testing/**'],
    [
      '**/storage/rocksdb/**',
      '**/storage/postgres/**',
      '**/storage/memory/**',
      '**/server/**',
      '**/client/**',
      '**/cli/**',
    ],
    'the conformance suite runs against any store: it may not name a backend.',
  ),
  layer(
    ['src/worker/**'],
    [
      '**/codec/**',
      '**/storage/**',
      '**/engine/**',
      '**/server/**',
      '**/client/**',
      '**/cli/**',
      '**/wire/**',
      '**/gen/**',
    ],
    'worker/ is the transport-free worker loop: it imports only core/.',
  ),
  layer(
    ['src/client/**'],
    ['**/engine/**', '**/storage/**', '**/codec/**', '**/server/**'],
    'the client speaks only the wire protocol.',
  ),
  layer(
    ['src/wire/**', 'src/gen/**'],
    ['**/engine/**', '**/storage/**', '**/codec/**', '**/server/**', '**/client/**', '**/cli/**'],
    'wire/ is the protocol only.',
  ),
  {
    files: ['test/**', 'bench/**', 'examples/**'],
    rules: {
      '@typescript-eslint/no-non-null-assertion': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
    },
  },
);
