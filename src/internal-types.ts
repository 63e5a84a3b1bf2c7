/**
 * The shapes forkwatch relies on in code it does not own: OpenTelemetry packages loaded on demand (optional peers)
 * and the MCP SDK classes it patches. Not exported from the package.
 */

/** A module loaded with require() whose exports forkwatch reads by name. */
export type OptionalPeerModule = object;

/** The part of @opentelemetry/sdk-logs' LoggerProvider that register uses. */
export interface LoggerProviderLike {
  forceFlush(): Promise<void>;
  shutdown(): Promise<void>;
}

/** An OTLP log exporter, handed to sdk-logs' BatchLogRecordProcessor unchanged. */
export type LogRecordExporterLike = object;
