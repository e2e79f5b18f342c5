import { rocksHarness } from '../support/backends.ts';
import { conformanceSuite } from './suite.ts';

conformanceSuite('rocksdb', rocksHarness);
