/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/** The fork lab with ESM server and client processes (the tests are in lab-scenarios.ts). */
import { describe } from 'vitest';
import { defineLabScenarioTests } from './lab-scenarios';

describe('fork lab, server view, esm', () => {
  defineLabScenarioTests('esm');
});
