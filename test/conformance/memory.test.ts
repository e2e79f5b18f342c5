import { memoryHarness } from '../support/backends.ts';
import { conformanceSuite } from './suite.ts';

conformanceSuite('memory', memoryHarness);
