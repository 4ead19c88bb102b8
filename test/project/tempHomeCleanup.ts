/**
 * Setup file: the temporary homes a test file made (test/tempHomes.ts) are removed after it.
 * Setup files run before every file, also where files share one module cache.
 */
import { afterAll } from 'vitest';
import { removeTempHomes } from '../tempHomes.js';

afterAll(removeTempHomes);
