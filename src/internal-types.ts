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
  /** Only on sdk-logs 0.5x (the OpenTelemetry JS 1.x line). */
  addLogRecordProcessor?(processor: unknown): void;
}

/** What @opentelemetry/resources 1.x (1.30) has in place of 2.x's `defaultResource()` and sync `detectResources`. */
export interface ResourcesLine1 {
  Resource: { default(): { merge(other: unknown): unknown } };
  detectResourcesSync(config: { detectors: unknown[] }): unknown;
}

/** An OTLP log exporter, handed to sdk-logs' BatchLogRecordProcessor unchanged. */
export type LogRecordExporterLike = object;

/** The part of import-in-the-middle (any major) that forkwatch uses: a hook on a package's internal files. */
export interface ImportInTheMiddleModule {
  Hook: new (
    modules: string[],
    options: { internals: boolean },
    hook: (exports: object, name: string, basedir: string | undefined) => unknown,
  ) => { unhook(): void };
}
