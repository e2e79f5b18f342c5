import { postgresHarness } from '../support/backends.ts';
import { conformanceSuite } from './suite.ts';

conformanceSuite('postgres', postgresHarness);
