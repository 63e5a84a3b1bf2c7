/*
 * Copyright The forkwatch Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * A module's `targets`: the endpoints its probes may reach. Whoever can reach the exporter names the target, and a
 * module's bearer and headers go to it: without a list, the exporter would hand them to any URL it is given.
 *
 *   "https://mcp.example.com"           that origin, any path
 *   "https://*.example.com:8443"        any subdomain of example.com (not example.com itself), that port
 *   "https://mcp.example.com/mcp"       that path only
 *   "https://mcp.example.com/tenants/*" any path that starts with /tenants/
 *
 * Schemes and ports match exactly (a missing port is the scheme's default); hosts and paths are compared after the
 * URL parser's normalisation (case, punycode, dot segments), the same as the target's.
 */
import { withoutSecrets } from './log-text';

export interface TargetPattern {
  /** As written in the config (a valid pattern holds no credentials, query or fragment), for messages. */
  text: string;
  protocol: string;
  hostname: string;
  /** `*.` before the host: any subdomain of it. */
  subdomains: boolean;
  port: string;
  /** undefined: any path. */
  path?: { value: string; prefix: boolean };
}

const PATTERN = /^(https?):\/\/(\*\.)?([^/?#*@]+)(\/[^?#]*)?$/i;

/**
 * The pattern, or why it is not one. A refused entry is shown without its credentials, query and fragment: they are
 * why it is refused, and often a secret (`?token=…`, `https://user:password@…`).
 */
export function parseTargetPattern(text: string): TargetPattern | string {
  const shown = JSON.stringify(withoutSecrets(text));
  const match = PATTERN.exec(text);
  if (match === null)
    return `not an origin or a URL pattern (http(s)://host[:port][/path], "*." before the host for its subdomains, "*" at the end of the path for a prefix, no credentials, query or fragment): ${shown}`;
  const [, scheme, star, host, rawPath] = match;
  const prefix = rawPath?.endsWith('*') === true;
  const pathText = prefix ? rawPath!.slice(0, -1) : rawPath;
  if (pathText?.includes('*')) return `"*" only ends a path: ${shown}`;
  let url: URL;
  try {
    url = new URL(`${scheme}://${host}${pathText ?? '/'}`);
  } catch {
    return `not a valid origin: ${shown}`;
  }
  const anyPath = pathText === undefined || pathText === '/';
  return {
    text,
    protocol: url.protocol,
    hostname: url.hostname,
    subdomains: star !== undefined,
    port: url.port,
    ...(anyPath ? {} : { path: { value: url.pathname, prefix } }),
  };
}

export function targetAllowed(patterns: readonly TargetPattern[], target: URL): boolean {
  return patterns.some(pattern => matches(pattern, target));
}

function matches(pattern: TargetPattern, target: URL): boolean {
  if (target.protocol !== pattern.protocol || target.port !== pattern.port) return false;
  const host = target.hostname;
  if (pattern.subdomains ? !host.endsWith(`.${pattern.hostname}`) : host !== pattern.hostname) return false;
  if (pattern.path === undefined) return true;
  return pattern.path.prefix ? target.pathname.startsWith(pattern.path.value) : target.pathname === pattern.path.value;
}
