/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/** @langchain/mcp-adapters (pinned in test/sdk-versions/langchain-mcp-adapters): a real fork and its healthy control, see client-stacks.ts. */
import { describe } from 'vitest';
import { clientStackTests } from './client-stacks';

describe('@langchain/mcp-adapters', () => {
  clientStackTests({
    name: 'langchain-mcp-adapters',
    folder: 'langchain-mcp-adapters',
    pkg: '@langchain/mcp-adapters',
    version: /^1\.1\./,
  });
});
