/**
 * Import rules that ESLint's per-file checks cannot express: no import circle
 * anywhere (type-only imports included), and what each public entry may load
 * at all, following imports transitively. `npm test` runs it (`npm run deps`).
 * Layer rules per folder live in eslint.config.js.
 */
/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'An import circle makes load order matter and layers meaningless.',
      from: {},
      to: { circular: true },
    },
    {
      name: 'client-loads-no-backend',
      severity: 'error',
      comment: 'telha/client speaks the wire protocol only: it must never load pg, RocksDB or the engine.',
      from: { path: '^src/client/index\\.ts$' },
      to: {
        reachable: true,
        path: ['node_modules/(pg|pg-pool|pg-protocol|@nxtedition/rocksdb)/', '^src/(engine|storage)/'],
      },
    },
    {
      name: 'engine-knows-only-the-seam',
      severity: 'error',
      comment: 'The engine depends on the JobStore seam; only src/open.ts and the backend entries name a backend.',
      from: { path: '^src/engine/' },
      to: { path: '^src/storage/(rocksdb|postgres|memory)/' },
    },
    {
      name: 'one-composition-root',
      severity: 'error',
      comment:
        'Backends are named by src/open.ts (lazily), their own entries, and telha/testing (the memory store) only.',
      from: {
        path: '^src/',
        pathNot: [
          '^src/open\\.ts$',
          '^src/rocksdb\\.ts$',
          '^src/postgres\\.ts$',
          '^src/testing\\.ts$',
          '^src/storage/',
        ],
      },
      to: { path: '^src/storage/(rocksdb|postgres|memory)/' },
    },
    {
      name: 'listeners-apart',
      severity: 'error',
      comment:
        'The gRPC (server/) and HTTP (http/) listeners never import each other, even by type: what both use lives below them (edge/, telemetry/), and only serve/ composes them.',
      from: { path: '^src/(server|http)/' },
      to: { path: '^src/(server|http)/', pathNot: '^src/$1/' },
    },
    {
      name: 'shared-rooms-stay-below',
      severity: 'error',
      comment: 'edge/ and telemetry/ sit below every listener and the composition: they may not import them.',
      from: { path: '^src/(edge|telemetry)/' },
      to: { path: '^src/(server|http|serve|cli)/' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^src/gen/' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { exportsFields: ['exports'], conditionNames: ['import', 'require', 'node', 'default'] },
  },
};
