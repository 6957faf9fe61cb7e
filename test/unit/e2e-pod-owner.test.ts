import { describe, expect, it } from 'vitest';
import { deploymentOfPod } from '../e2e/support/pod-owner.ts';

describe("a pod's Deployment for the e2e footprint table", () => {
  it('strips the template hash and the pod suffix, whatever the hash length (1 to 10 letters)', () => {
    expect(deploymentOfPod('all-58bdf64-f4qzf', { 'pod-template-hash': '58bdf64' })).toBe('all');
    expect(deploymentOfPod('all-7d9c8b6f4d-x2k9p', { 'pod-template-hash': '7d9c8b6f4d' })).toBe(
      'all',
    );
    expect(deploymentOfPod('portcullis-auth-server-b-qq2zx', { 'pod-template-hash': 'b' })).toBe(
      'portcullis-auth-server',
    );
  });

  it('keeps the name of a pod that no Deployment made, or whose name does not carry its hash', () => {
    expect(
      deploymentOfPod('pc-redis-0', { 'statefulset.kubernetes.io/pod-name': 'pc-redis-0' }),
    ).toBe('pc-redis-0');
    expect(deploymentOfPod('client')).toBe('client');
    expect(deploymentOfPod('other-abc12-x2k9p', { 'pod-template-hash': '58bdf64' })).toBe(
      'other-abc12-x2k9p',
    );
  });
});
