import { EntitySchema } from '@mikro-orm/core';
import type { PlanName } from '../../config/plans';

export interface Account {
  id: string;
  email: string;
  fullName: string | null;
  plan: PlanName;
  createdAt: Date;
  updatedAt: Date;
}

export const AccountSchema = new EntitySchema<Account>({
  name: 'Account',
  tableName: 'accounts',
  properties: {
    id: { type: 'string', primary: true, length: 40 },
    // Stored lower-cased by the service; unique so that one address is one account.
    email: { type: 'string', length: 320, unique: true },
    fullName: { type: 'string', length: 200, nullable: true },
    plan: { type: 'string', length: 20 },
    createdAt: { type: 'datetime', defaultRaw: 'now()' },
    updatedAt: { type: 'datetime', defaultRaw: 'now()', onUpdate: () => new Date() },
  },
});
