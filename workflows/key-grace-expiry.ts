import { proxyActivities, sleep } from '@temporalio/workflow';
import type { Activities } from '../activities';

const { revokeEndedKey } = proxyActivities<Activities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '5 minutes' },
});

export interface KeyGraceExpiryInput {
  keyId: string;
  /** Length of the grace, measured on the workflow's durable timer (time-skipping in tests). */
  graceMs: number;
}

/** `key-grace/<key>`: a durable timer for the rotation grace, then the old key is revoked. */
export async function keyGraceExpiry(input: KeyGraceExpiryInput): Promise<{ revoked: boolean }> {
  await sleep(input.graceMs);
  const revoked = await revokeEndedKey(input.keyId);
  return { revoked };
}
