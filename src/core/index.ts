/** The continuity core: pure TypeScript, no OpenTelemetry and no MCP SDK imports. */
export * from './codecs';
export * from './delivery-ledger';
export * from './delivery-rules';
export * from './event-id';
export * from './ledger';
export * from './sse-frame-observer';
export * from './verdict';
