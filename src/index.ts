export { ForkwatchInstrumentation } from './instrumentation';
export { StreamForkDetected } from './errors';
export type { ForkwatchInstrumentationConfig, OnForkMode, ResumeVerdictInfo } from './types';
export { hashSessionId } from './session-id';
export * from './core';
export * from './names';
export { PACKAGE_NAME, PACKAGE_VERSION } from './version';
