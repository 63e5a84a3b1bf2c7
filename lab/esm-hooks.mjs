/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
// Installs the import-in-the-middle loader hooks of forkwatch's own @opentelemetry/instrumentation copy.
import { register } from 'node:module';
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
const require = createRequire(import.meta.url);
register(pathToFileURL(require.resolve('@opentelemetry/instrumentation/hook.mjs')));
