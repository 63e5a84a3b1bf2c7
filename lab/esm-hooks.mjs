/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
// The ESM loader hooks of forkwatch's own @opentelemetry/instrumentation copy, as an app with its own SDK installs
// them: `--import forkwatch/hooks` (synchronous hooks where the runtime runs them, the loader thread elsewhere).
import '../build/src/hooks.js';
