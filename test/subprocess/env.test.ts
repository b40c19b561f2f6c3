import { describe, expect, it } from 'vitest';
import {
  isSecretName,
  isSecretValue,
  SECRET_NAME_PATTERNS,
  SECRET_VALUE_PATTERNS,
  sanitizeEnv,
} from '../../src/subprocess/env.js';

// Fixtures are assembled from pieces so that no scanner mistakes this file for a leak.
const fake = (...parts: string[]): string => parts.join('');
const PEM = fake('-----BEGIN ', 'RSA PRIVATE KEY-----\nMIIEow\n-----END RSA PRIVATE KEY-----');
const JWT = fake('eyJhbGciOiJIUzI1NiJ9', '.', 'eyJzdWIiOiIxMjM0NTY3ODkwIn0', '.sig');

describe('sanitizeEnv', () => {
  it.each<[string, string]>([
    ['PATH', '/usr/local/bin:/usr/bin:/bin'],
    ['HOME', '/home/agent'],
    ['LANG', 'en_US.UTF-8'],
    ['LANGUAGE', 'en_US:en'],
    ['LC_ALL', 'C.UTF-8'],
    ['LC_CTYPE', 'en_US.UTF-8'],
    ['http_proxy', 'http://proxy.corp:3128'],
    ['HTTPS_PROXY', 'http://proxy.corp:3128'],
    ['ALL_PROXY', 'socks5://proxy.corp:1080'],
    ['no_proxy', 'localhost,127.0.0.1,.corp'],
    ['NO_PROXY', 'localhost'],
    ['TERM', 'xterm-256color'],
    ['EDITOR', 'vim'],
    ['SSL_CERT_FILE', '/etc/ssl/certs/ca-certificates.crt'],
    ['NODE_EXTRA_CA_CERTS', '/etc/corp-ca.pem'],
    ['NIX_SSL_CERT_FILE', '/etc/ssl/certs/ca-bundle.crt'],
    ['PIP_CERT', '/etc/corp-ca.pem'],
    ['HTTPLIB2_CA_CERTS', '/etc/corp-ca.pem'],
    ['CLOUDSDK_CORE_CUSTOM_CA_CERTS_FILE', '/etc/corp-ca.pem'],
    ['DATABASE_URL', 'postgres://db.internal:5432/app'],
    ['TASK_LABEL', 'task-force-alpha-bravo-charlie-delta'],
    ['SHORT', 'sk-1'],
  ])('S3: keeps %s', (name, value) => {
    expect(sanitizeEnv({ [name]: value })).toEqual({ [name]: value });
  });

  it.each<[string]>([
    ['AWS_SECRET_ACCESS_KEY'],
    ['OPENAI_API_KEY'],
    ['api_key'],
    ['DB_PASSWORD'],
    ['MYSQL_PWD_PASSWD'],
    ['CLIENT_SECRET'],
    ['GITHUB_TOKEN'],
    ['npm_config__authToken'],
    ['SSH_AUTH_SOCK'],
    ['GOOGLE_APPLICATION_CREDENTIALS'],
    ['PRIVATE_REPO_URL'],
    ['CLIENT_CERT'],
    ['TLS_CERT_PATH'],
    ['SSL_CERT_KEY'],
    ['CA_CERT_PASSWORD'],
    ['Some_Key_Name'],
  ])('S3: drops %s for its name (case-insensitive)', (name) => {
    expect(sanitizeEnv({ [name]: 'harmless', PATH: '/bin' })).toEqual({ PATH: '/bin' });
  });

  it.each<[string, string]>([
    ['PEM private key', PEM],
    ['GitHub classic token', fake('ghp_', 'a'.repeat(36))],
    ['GitHub OAuth token', fake('gho_', 'B1'.repeat(18))],
    ['GitHub server token', fake('ghs_', 'c2'.repeat(18))],
    ['GitHub fine-grained token', fake('github_pat_', '11AAAA_', 'x'.repeat(40))],
    ['AWS access key id', fake('AKIA', 'ABCDEFGHIJ234567')],
    ['JWT', JWT],
    ['bearer JWT', `Bearer ${JWT}`],
    ['Stripe live key', fake('sk_live_', '4eC39HqLyjWDarjtT1zdp7dc')],
    ['Anthropic key', fake('sk-ant-', 'api03-', 'x'.repeat(30))],
    ['OpenAI project key', fake('sk-proj-', 'y'.repeat(30))],
    ['long sk- key', fake('sk-', 'z9'.repeat(20))],
    ['Slack bot token', fake('xoxb-', '1234567890-abcdefghij')],
    ['Slack user token', fake('xoxp-', '1234567890-abcdefghij')],
    ['credentials in a URL', 'postgres://app:hunter2@db.internal:5432/app'],
    ['credentials in an https URL', 'https://user:pa%40ss@git.corp/repo.git'],
  ])('S3: drops a value shaped like a %s whatever the name', (_shape, value) => {
    expect(sanitizeEnv({ HARMLESS_NAME: value, PATH: '/bin' })).toEqual({ PATH: '/bin' });
    expect(isSecretValue(value)).toBe(true);
  });

  it.each<[string, string, string]>([
    ['http_proxy', 'http://bob:s3cret@proxy.corp:3128', 'http://proxy.corp:3128'],
    ['HTTPS_PROXY', 'http://bob:s3cret@proxy.corp:3128/', 'http://proxy.corp:3128/'],
    ['Https_Proxy', 'https://bob:p@ss@proxy.corp', 'https://proxy.corp'],
    ['ALL_PROXY', 'socks5h://token-only@proxy.corp:1080', 'socks5h://proxy.corp:1080'],
    ['all_proxy', 'bob:s3cret@proxy.corp:8080', 'proxy.corp:8080'],
  ])('S3: %s keeps scheme, host and port but loses its credentials', (name, value, expected) => {
    expect(sanitizeEnv({ [name]: value })).toEqual({ [name]: expected });
  });

  it.each<[string | undefined, string]>([
    [undefined, 'TETHER_AGENT'],
    [undefined, 'tether_owner'],
    [undefined, 'Tether_Tree'],
    ['ACME_', 'ACME_SESSION'],
    ['ACME_', 'acme_session'],
  ])('S3: drops every variable of the identity prefix %s (%s)', (identityPrefix, name) => {
    const policy = identityPrefix === undefined ? {} : { identityPrefix };
    expect(sanitizeEnv({ [name]: 'agent-1', PATH: '/bin' }, policy)).toEqual({ PATH: '/bin' });
  });

  it('S3: a custom identity prefix leaves the default one alone', () => {
    expect(sanitizeEnv({ TETHER_X: '1' }, { identityPrefix: 'ACME_' })).toEqual({ TETHER_X: '1' });
  });

  it('S3: allow gives a minimal env, and the secret rules still apply to it', () => {
    const host = {
      PATH: '/bin',
      HOME: '/h',
      LC_ALL: 'C',
      LC_TIME: 'C',
      EDITOR: 'vim',
      NPM_TOKEN: 'x',
      PAGER: fake('ghp_', 'a'.repeat(36)),
      TETHER_AGENT: 'a',
    };
    const allow = ['PATH', 'HOME', 'LC_*', 'NPM_TOKEN', 'PAGER', 'TETHER_AGENT'];
    expect(sanitizeEnv(host, { allow })).toEqual({ PATH: '/bin', HOME: '/h', LC_ALL: 'C', LC_TIME: 'C' });
  });

  it('S3: the overlay sets without filtering and deletes with undefined', () => {
    const env = sanitizeEnv(
      { PATH: '/bin', PAGER: 'less', EDITOR: 'vim' },
      {},
      { GITHUB_TOKEN: 'chosen-by-caller', TETHER_TREE: '42.abc', PAGER: undefined, NOT_THERE: undefined },
    );
    expect(env).toEqual({
      PATH: '/bin',
      EDITOR: 'vim',
      GITHUB_TOKEN: 'chosen-by-caller',
      TETHER_TREE: '42.abc',
    });
  });

  it('S3: never mutates its inputs', () => {
    const host = { PATH: '/bin', API_KEY: 'k', http_proxy: 'http://u:p@proxy:1' };
    const overlay = { PATH: undefined, X: '1' };
    const policy = { allow: ['PATH', 'http_proxy', 'API_KEY'] };
    const copies = structuredClone([host, overlay, policy]);
    sanitizeEnv(host, policy, overlay);
    expect([host, overlay, policy]).toEqual(copies);
  });

  it('S3: skips undefined host values and keeps a variable named __proto__ as a plain entry', () => {
    const host: NodeJS.ProcessEnv = { PATH: '/bin', GONE: undefined };
    Object.defineProperty(host, '__proto__', { value: 'x', enumerable: true });
    const env = sanitizeEnv(host);
    expect(Object.keys(env).sort()).toEqual(['PATH', '__proto__']);
    expect(Object.getPrototypeOf(env)).toBe(null);
  });

  it('S3: exports the pattern lists as frozen data for the README', () => {
    expect(Object.isFrozen(SECRET_NAME_PATTERNS)).toBe(true);
    expect(Object.isFrozen(SECRET_VALUE_PATTERNS)).toBe(true);
    expect(SECRET_NAME_PATTERNS).toEqual(expect.arrayContaining(['KEY', 'PASSWORD', 'SECRET', 'TOKEN']));
    expect(isSecretName('SSL_CERT_FILE')).toBe(false);
    expect(isSecretName('ssl_cert_file_password')).toBe(true);
  });
});
