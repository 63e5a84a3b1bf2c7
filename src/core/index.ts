/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/** The continuity core: pure TypeScript, no OpenTelemetry and no MCP SDK imports. */
export * from './clip';
export * from './codecs';
export * from './delivery-ledger';
export * from './delivery-rules';
export * from './density';
export * from './event-id';
export * from './evidence';
export * from './ledger';
export * from './replay-boundary';
export * from './sse-frame-observer';
export * from './verdict';
export * from './per-request';
export * from './per-request-client';
