import { rocksWriteThreadHarness } from '../support/backends.ts';
import { conformanceSuite } from '../../src/testing/conformance/index.ts';

// The same suite with every RocksDB batch written on the write thread, however small.
conformanceSuite('rocksdb, every batch on the write thread', rocksWriteThreadHarness);
