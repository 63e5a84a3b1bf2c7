/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/** The fork lab with CommonJS server and client processes (the tests are in lab-scenarios.ts). */
import { describe } from 'vitest';
import { defineFreshStoreTest, defineLabScenarioTests } from './lab-scenarios';

describe('fork lab, server view, cjs', () => {
  defineLabScenarioTests('cjs');
  defineFreshStoreTest('cjs');
});
