import ipaddr from 'ipaddr.js';
import { RateLimiterRes, type RateLimiterPostgres } from 'rate-limiter-flexible';
import type { Knex } from '@mikro-orm/postgresql';
import { SIGN_IN_LIMITS, type SignInStep } from '../../config/plans';
import { postgresLimiter, RateLimited } from '../rate-limits';

/**
 * The client a budget is counted for: an IPv4 address as it is, an IPv6 address by its /64. One
 * IPv6 subscriber (a home line, a cloud VM) is given a /64 or more and may send from any of its 2^64
 * addresses, so a budget per IPv6 address bounded nothing: a sixteenth probe sent each sign-in step
 * from a new address of one /64 and was never refused (staff passwords tried without end, each an
 * scrypt hash; sign-in mails sent to any number of addresses). Text that is no address is its own key.
 */
export function clientBudgetKey(client: string): string {
  if (!ipaddr.isValid(client)) return client;
  let parsed = ipaddr.parse(client);
  if (parsed.kind() === 'ipv6' && (parsed as ipaddr.IPv6).isIPv4MappedAddress()) parsed = (parsed as ipaddr.IPv6).toIPv4Address();
  if (parsed.kind() === 'ipv4') return parsed.toString();
  const parts = (parsed as ipaddr.IPv6).toNormalizedString().split(':').slice(0, 4);
  return `${parts.join(':')}::/64`;
}

/**
 * Budgets of the sign-in steps per address and per client address (rate-limiter-flexible on the
 * shared PostgreSQL table), so that guessing codes or flooding an inbox is slow from any process.
 */
export class SignInLimits {
  private readonly limiters = new Map<string, RateLimiterPostgres>();

  constructor(
    private readonly knex: Knex,
    private readonly scale: number,
  ) {}

  private limiter(step: SignInStep, scope: 'address' | 'client', points: number): RateLimiterPostgres {
    const name = `signin:${step}:${scope}`;
    let limiter = this.limiters.get(name);
    if (!limiter) {
      limiter = postgresLimiter({ knex: this.knex }, name, points * this.scale, SIGN_IN_LIMITS[step].windowSeconds);
      this.limiters.set(name, limiter);
    }
    return limiter;
  }

  /** Counts one attempt of `step`; 429 RATE_LIMITED (with the wait) when either budget is spent. */
  async consume(step: SignInStep, who: { address?: string | null; client: string | null }): Promise<void> {
    const budget = SIGN_IN_LIMITS[step];
    const counted: Array<[RateLimiterPostgres, string, number]> = [];
    const client = who.client ? clientBudgetKey(who.client) : null;
    if (client) counted.push([this.limiter(step, 'client', budget.perClient), client, budget.perClient]);
    if (who.address && budget.perAddress !== null) {
      const key = budget.addressPerClient ? `${who.address} ${client ?? ''}` : who.address;
      counted.push([this.limiter(step, 'address', budget.perAddress), key, budget.perAddress]);
    }
    const outcomes = await Promise.allSettled(counted.map(([limiter, key]) => limiter.consume(key)));
    for (const [i, outcome] of outcomes.entries()) {
      if (outcome.status === 'fulfilled') continue;
      if (!(outcome.reason instanceof RateLimiterRes)) throw outcome.reason;
      const resetSeconds = Math.max(1, Math.ceil(outcome.reason.msBeforeNext / 1000));
      throw new RateLimited({ limit: counted[i]![2] * this.scale, remaining: 0, resetSeconds }, 'sign-in');
    }
  }
}
