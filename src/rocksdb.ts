/**
 * `telha/rocksdb`: the embedded RocksDB backend, for programs that build
 * their queue on a store of their own choosing. Importing it loads the
 * native RocksDB binding.
 */
export { RocksJobStore } from './storage/rocksdb/rocks-store.ts';
export type { RocksStoreOptions } from './storage/rocksdb/rocks-store.ts';
