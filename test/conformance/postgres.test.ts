import { postgresHarness } from '../support/backends.ts';
import { conformanceSuite } from '../../src/testing/conformance/index.ts';

conformanceSuite('postgres', postgresHarness);
