import { createHash } from 'node:crypto';

/**
 * What follows a person from a deleted account into the next one made with the same address (the
 * month's allowance left, the free routes' daily budgets), without keeping the address itself.
 */
export const addressHash = (email: string): string => createHash('sha256').update(email.trim().toLowerCase()).digest('hex');
