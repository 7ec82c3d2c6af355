import { describe, expect, it } from 'vitest';
import { childEnvironment, DEFAULT_PASS_ENV } from './child-env.js';

const gatewayEnv: NodeJS.ProcessEnv = {
  PATH: '/usr/bin:/bin',
  HOME: '/home/gw',
  LANG: 'C.UTF-8',
  GITHUB_TOKEN: 'ghp_secret',
  DATABASE_URL: 'postgres://user:pw@db/prod',
  AWS_SECRET_ACCESS_KEY: 'aws-secret',
  SWITCHBOARD_ADMIN_TOKEN: 'sb-secret',
  NODE_OPTIONS: '--require /tmp/evil.js',
};

describe('childEnvironment', () => {
  it('passes only the minimal set of variables a program needs', () => {
    const env = childEnvironment({}, gatewayEnv);
    if (process.platform !== 'win32')
      expect(env).toEqual({ PATH: '/usr/bin:/bin', HOME: '/home/gw', LANG: 'C.UTF-8' });
    for (const name of Object.keys(env)) expect(DEFAULT_PASS_ENV).toContain(name);
  });

  it("never inherits the gateway's secrets", () => {
    const env = childEnvironment({}, gatewayEnv);
    for (const secret of [
      'GITHUB_TOKEN',
      'DATABASE_URL',
      'AWS_SECRET_ACCESS_KEY',
      'SWITCHBOARD_ADMIN_TOKEN',
      'NODE_OPTIONS',
    ]) {
      expect(env).not.toHaveProperty(secret);
    }
    expect(Object.values(env).join('\n')).not.toMatch(/secret|pw@/);
  });

  it('passes named variables with passEnv, skipping those that are not set', () => {
    const env = childEnvironment({ passEnv: ['GITHUB_TOKEN', 'NOT_SET_ANYWHERE'] }, gatewayEnv);
    expect(env.GITHUB_TOKEN).toBe('ghp_secret');
    expect(env).not.toHaveProperty('NOT_SET_ANYWHERE');
    expect(env).not.toHaveProperty('DATABASE_URL');
  });

  it('sets variables with env, which win over inherited ones', () => {
    const env = childEnvironment(
      { passEnv: ['GITHUB_TOKEN'], env: { API_KEY: 'xyz', PATH: '/opt/bin', GITHUB_TOKEN: 'other' } },
      gatewayEnv,
    );
    expect(env.API_KEY).toBe('xyz');
    expect(env.PATH).toBe('/opt/bin');
    expect(env.GITHUB_TOKEN).toBe('other');
  });

  it('reads process.env by default', () => {
    const name = 'SWITCHBOARD_CHILD_ENV_TEST_SECRET';
    process.env[name] = 'leak';
    try {
      expect(childEnvironment({})).not.toHaveProperty(name);
      expect(childEnvironment({ passEnv: [name] })[name]).toBe('leak');
    } finally {
      delete process.env[name];
    }
  });
});
