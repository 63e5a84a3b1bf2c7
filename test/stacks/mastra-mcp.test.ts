/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/** @mastra/mcp (pinned in test/sdk-versions/mastra-mcp): a real fork and its healthy control, see client-stacks.ts. */
import { describe } from 'vitest';
import { clientStackTests } from './client-stacks';

describe('@mastra/mcp', () => {
  clientStackTests({ name: 'mastra-mcp', folder: 'mastra-mcp', pkg: '@mastra/mcp', version: /^2\.0\./ });
});
