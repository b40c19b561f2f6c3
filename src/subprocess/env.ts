/**
 * The environment a child starts with (SPEC S3): the host env minus anything that looks like
 * a secret or belongs to the runtime itself, then the caller's overlay.
 */

/** Every host variable whose name starts with this (case-insensitive) is the runtime's own. */
export const DEFAULT_IDENTITY_PREFIX = 'TETHER_';

/** A variable whose upper-cased name contains one of these is dropped (S3). */
export const SECRET_NAME_PATTERNS: readonly string[] = Object.freeze([
  'KEY',
  'PASSWORD',
  'PASSWD',
  'SECRET',
  'TOKEN',
  'AUTH',
  'CREDENTIAL',
  'PRIVATE',
  'CERT',
]);

/**
 * Names of public CA trust anchors (`SSL_CERT_FILE`, `NODE_EXTRA_CA_CERTS`, `PIP_CERT`, …): for
 * them the `CERT` pattern is waived, because dropping them breaks TLS behind corporate proxies.
 * Every other name pattern and every value pattern still applies.
 */
export const CA_TRUST_NAME_PATTERN: RegExp = /CA_?CERTS?(?:_|$)|SSL_CERT_(?:FILE|DIR)$|^PIP_CERT$/i;

/** A value shape that is a credential whatever the variable is called. */
export interface SecretValuePattern {
  readonly name: string;
  readonly pattern: RegExp;
}

/** A variable whose value matches one of these is dropped, even when its name is allowed (S3). */
export const SECRET_VALUE_PATTERNS: readonly SecretValuePattern[] = Object.freeze([
  { name: 'PEM private key', pattern: /-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----/ },
  { name: 'GitHub token', pattern: /\b(?:gh[oprsu]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})/ },
  { name: 'AWS access key id', pattern: /\b(?:AKIA|ASIA)[0-9A-Z]{16}\b/ },
  { name: 'JWT', pattern: /\beyJ[A-Za-z0-9_-]{4,}\.eyJ[A-Za-z0-9_-]{4,}/ },
  { name: 'Stripe key', pattern: /\b[rs]k_(?:live|test)_[A-Za-z0-9]{10,}/ },
  { name: 'sk- API key', pattern: /\bsk-(?:(?:ant|proj)-[A-Za-z0-9_-]{10,}|[A-Za-z0-9_-]{20,})/ },
  { name: 'Slack token', pattern: /\bxox[abeprs]-[A-Za-z0-9-]{10,}/ },
  { name: 'credentials in a URL', pattern: /\b[a-z][a-z0-9+.-]*:\/\/[^\s/:@]+:[^\s/]*@/i },
] as const);

/** Proxy variables (any case): kept, with credentials embedded in the URL removed. */
export const PROXY_NAMES: readonly string[] = Object.freeze([
  'http_proxy',
  'https_proxy',
  'ftp_proxy',
  'all_proxy',
  'no_proxy',
]);

/** How the host env is filtered before the overlay is applied. */
export interface EnvPolicy {
  /** Host variables starting with this (case-insensitive) are dropped. Default `'TETHER_'`. */
  readonly identityPrefix?: string;
  /**
   * When given, only these names pass (exact, or a prefix when the entry ends with `*`, e.g.
   * `'LC_*'`). A minimal env; it restricts further and never admits a secret: the name and
   * value rules still apply. Pass a secret deliberately through the overlay instead.
   */
  readonly allow?: readonly string[];
}

/**
 * Builds a child's environment (S3): start from `host`; drop variables whose name matches
 * {@link SECRET_NAME_PATTERNS}, whose value matches {@link SECRET_VALUE_PATTERNS}, or whose
 * name starts with the identity prefix; keep PATH, HOME, locale, proxies (credentials
 * stripped) and the rest. Then apply `overlay`: a string sets (unfiltered — the caller's
 * explicit choice), `undefined` deletes. Inputs are never mutated.
 *
 * @example
 * ```ts
 * const env = sanitizeEnv(process.env, {}, { TERM: 'dumb', PAGER: undefined });
 * // env.PATH is kept, env.GITHUB_TOKEN and env.TETHER_AGENT are gone, env.TERM === 'dumb'
 * const minimal = sanitizeEnv(process.env, { allow: ['PATH', 'HOME', 'LANG', 'LC_*'] });
 * ```
 */
export function sanitizeEnv(
  host: NodeJS.ProcessEnv,
  policy: EnvPolicy = {},
  overlay: Readonly<Record<string, string | undefined>> = {},
): Record<string, string> {
  const prefix = (policy.identityPrefix ?? DEFAULT_IDENTITY_PREFIX).toUpperCase();
  const allow = policy.allow === undefined ? null : compileAllow(policy.allow);
  // Null prototype: a variable named `__proto__` stays a plain entry.
  const out: Record<string, string> = Object.create(null);
  for (const [name, raw] of Object.entries(host)) {
    if (raw === undefined) continue;
    if (allow !== null && !allow(name)) continue;
    const value = filtered(prefix, name, raw);
    if (value !== null) out[name] = value;
  }
  for (const [name, value] of Object.entries(overlay)) {
    if (value === undefined) delete out[name];
    else out[name] = value;
  }
  return out;
}

/**
 * True when `name` would be dropped for its name alone (S3).
 *
 * @example
 * ```ts
 * isSecretName('NPM_TOKEN'); // true
 * isSecretName('SSL_CERT_FILE'); // false: a public trust anchor, see CA_TRUST_NAME_PATTERN
 * ```
 */
export function isSecretName(name: string): boolean {
  const upper = name.toUpperCase();
  const trustAnchor = CA_TRUST_NAME_PATTERN.test(name);
  return SECRET_NAME_PATTERNS.some((p) => upper.includes(p) && !(trustAnchor && p === 'CERT'));
}

/**
 * True when `value` is shaped like a credential (S3).
 *
 * @example
 * ```ts
 * isSecretValue('postgres://app:hunter2@db:5432/app'); // true
 * isSecretValue('/usr/local/bin:/usr/bin'); // false
 * ```
 */
export function isSecretValue(value: string): boolean {
  return SECRET_VALUE_PATTERNS.some(({ pattern }) => pattern.test(value));
}

/** What a command is told about who runs it (S3): each field becomes one variable. */
export interface IdentitySnapshot {
  readonly sessionId?: string | undefined;
  /** The agent publication id. */
  readonly agentId?: string | undefined;
  /** Only in a background job's env. */
  readonly jobId?: string | undefined;
}

/**
 * The identity variables for a command's env overlay (S3's last sentence): `<prefix>SESSION_ID`,
 * `<prefix>AGENT_ID`, `<prefix>JOB_ID` for the fields given. They go last in the overlay, after
 * the sanitizer dropped every inherited variable of the prefix, so a nested command sees its
 * own agent's values and never its parent's. An empty prefix names them with the default one.
 *
 * @example
 * ```ts
 * identityEnv({ sessionId: 's1', agentId: 'agent:s1:1' });
 * // { TETHER_SESSION_ID: 's1', TETHER_AGENT_ID: 'agent:s1:1' }
 * ```
 */
export function identityEnv(snapshot: IdentitySnapshot, prefix?: string): Record<string, string> {
  const p = (prefix || DEFAULT_IDENTITY_PREFIX).toUpperCase();
  const env: Record<string, string> = {};
  if (snapshot.sessionId !== undefined) env[`${p}SESSION_ID`] = snapshot.sessionId;
  if (snapshot.agentId !== undefined) env[`${p}AGENT_ID`] = snapshot.agentId;
  if (snapshot.jobId !== undefined) env[`${p}JOB_ID`] = snapshot.jobId;
  return env;
}

// The host env is the same from one spawn to the next, and judging a variable costs a dozen
// regex tests (≈100 µs for 40 variables, 2% of a `bash -c true`): each (prefix, name, value)
// is judged once (per name: the last value seen). Bounded: a host with ever new names starts afresh.
const MEMO_LIMIT = 4096;
const memo = new Map<
  string,
  { readonly prefix: string; readonly raw: string; readonly value: string | null }
>();

// What `name=raw` becomes in a child's env: its value (proxy credentials stripped), or null.
function filtered(prefix: string, name: string, raw: string): string | null {
  const known = memo.get(name);
  if (known !== undefined && known.raw === raw && known.prefix === prefix) return known.value;
  let value: string | null = null;
  if (!(prefix !== '' && name.toUpperCase().startsWith(prefix)) && !isSecretName(name)) {
    const stripped = isProxyName(name) ? stripUrlCredentials(raw) : raw;
    if (!isSecretValue(stripped)) value = stripped;
  }
  if (memo.size >= MEMO_LIMIT) memo.clear();
  memo.set(name, { prefix, raw, value });
  return value;
}

// Proxy names are matched case-insensitively: curl honours both http_proxy and HTTP_PROXY.
function isProxyName(name: string): boolean {
  return PROXY_NAMES.includes(name.toLowerCase());
}

// Removes `user:pass@` (or `user@`) after a scheme or at the start: scheme, host, port remain.
function stripUrlCredentials(value: string): string {
  return value.replace(/(^|:\/\/)[^\s/]*@/g, '$1');
}

// Exact names, or prefixes for entries ending with `*`.
function compileAllow(entries: readonly string[]): (name: string) => boolean {
  const exact = new Set(entries.filter((e) => !e.endsWith('*')));
  const prefixes = entries.filter((e) => e.endsWith('*')).map((e) => e.slice(0, -1));
  return (name) => exact.has(name) || prefixes.some((p) => name.startsWith(p));
}
