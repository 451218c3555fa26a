import type { AppConfig } from '../../config/env';
import type { DeliverySettings } from './delivery';
import type { RelaySettings } from './relay';
import { loadSecretBox } from './secrets';

export interface WebhookSettings {
  delivery: DeliverySettings;
  relay: RelaySettings;
  /** Delivery attempts one worker process runs at once (its delivery queue's activity slots). */
  attemptsPerWorker: number;
}

const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** `5s`, `30m`, `2h`… in milliseconds (the configuration's duration syntax). */
export function durationMs(text: string): number {
  const match = /^(\d+)(ms|s|m|h|d)$/.exec(text.trim());
  if (!match) throw new Error(`Not a duration: ${text}`);
  return Number(match[1]) * UNIT_MS[match[2]!]!;
}

/** What the API and the worker need for webhooks, built once from the configuration. */
export function webhookSettings(config: AppConfig): WebhookSettings {
  const timeoutMs = config.WEBHOOK_TIMEOUT_SECONDS * 1000;
  return {
    delivery: {
      box: loadSecretBox(config),
      policy: { allowLoopbackHttp: config.WEBHOOKS_ALLOW_LOOPBACK_HTTP },
      timeoutMs,
      attemptsInFlight: { perAccount: config.WEBHOOK_ATTEMPTS_PER_ACCOUNT, perEndpoint: config.WEBHOOK_ATTEMPTS_PER_ENDPOINT },
    },
    relay: { everyMs: config.WEBHOOK_RELAY_EVERY_MS, delaysMs: config.WEBHOOK_RETRY_DELAYS.split(',').map(durationMs), attemptTimeoutMs: timeoutMs },
    attemptsPerWorker: config.WEBHOOK_ATTEMPTS_PER_WORKER,
  };
}
