/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/** @openai/agents (pinned in test/sdk-versions/openai-agents): a real fork and its healthy control, see client-stacks.ts. */
import { describe } from 'vitest';
import { clientStackTests } from './client-stacks';

describe('@openai/agents', () => {
  clientStackTests({ name: 'openai-agents', folder: 'openai-agents', pkg: '@openai/agents', version: /^0\.20\./ });
});
