import { AppError } from './errors';

/**
 * Free engine calls (backtests, validations' trial fits) an account may have running or waiting at
 * once in one API process. Two lets a person validate one dataset while backtesting another; a third
 * is 429. Before this bound, one free account's 60 concurrent 8 MB backtests (92 s of engine work
 * each) queued an hour of work and grew the API process by 0.8 GB, kept after the clients hung up;
 * at its rate budget (100 calls in 10 s) the process would have run out of memory within minutes.
 */
export const FREE_WORK_PER_ACCOUNT = 2;

/**
 * Free calls that may wait for a thread at once, all accounts together: the memory their rows hold
 * is bounded however many accounts call. Beyond, 503 SERVICE_UNAVAILABLE (retry later); paid calls
 * never wait here.
 */
export const FREE_WORK_MAX_WAITING = 8;

/** What a refused caller is told to wait: free work often takes tens of seconds. */
export const FREE_WORK_RETRY_SECONDS = 10;

/** Whose free call this is, and the signal of its client going away (its work is then not begun). */
export interface FreeCall {
  owner: string;
  signal?: AbortSignal;
}

const abandoned = (): AppError =>
  new AppError('CLIENT_CLOSED_REQUEST', 499, 'The client closed the connection while the call waited for an engine thread; nothing was run.');

/**
 * Runs free work on at most `concurrency` threads, bounded per owner and in total, and gives a freed
 * thread to the waiting owner served longest ago, not in arrival order: an account that queued its two
 * calls first does not make another account's one call wait for both. A waiting call whose client hangs up
 * leaves the queue at once, so its rows are released. Hand-written: the queue libraries at hand
 * (p-limit, p-queue) serve in arrival order only and cannot drop a waiting task.
 */
export class FreeWorkQueue {
  private running = 0;
  private waiting = 0;
  /** Per owner, the starters of its waiting calls in arrival order. */
  private readonly queues = new Map<string, Array<() => void>>();
  private readonly held = new Map<string, number>();
  /** When each owner holding calls last got a thread (a counter); an owner never served goes first. */
  private readonly lastServed = new Map<string, number>();
  private served = 0;

  constructor(
    readonly concurrency: number,
    readonly limits: { perOwner: number; maxWaiting: number } = { perOwner: FREE_WORK_PER_ACCOUNT, maxWaiting: FREE_WORK_MAX_WAITING },
  ) {}

  get activeCount(): number {
    return this.running;
  }

  get pendingCount(): number {
    return this.waiting;
  }

  async run<T>(call: FreeCall, work: () => Promise<T>): Promise<T> {
    const held = this.held.get(call.owner) ?? 0;
    if (held >= this.limits.perOwner) {
      throw new AppError(
        'RATE_LIMITED',
        429,
        `This account already has ${held} free engine calls (backtests, validations) running or waiting; retry when one has answered.`,
        { retry_after_seconds: FREE_WORK_RETRY_SECONDS },
      );
    }
    if (this.running >= this.concurrency && this.waiting >= this.limits.maxWaiting) {
      throw new AppError('SERVICE_UNAVAILABLE', 503, 'The engines are busy with free calls; retry in a minute. Paid calls are not affected.');
    }
    this.held.set(call.owner, held + 1);
    try {
      await this.turn(call);
      try {
        return await work();
      } finally {
        this.running -= 1;
        this.startNext();
      }
    } finally {
      const left = (this.held.get(call.owner) ?? 1) - 1;
      if (left > 0) this.held.set(call.owner, left);
      else {
        this.held.delete(call.owner);
        this.lastServed.delete(call.owner);
      }
    }
  }

  /** Resolves when the call holds a thread (counted in `running`); rejects if its client leaves first. */
  private turn({ owner, signal }: FreeCall): Promise<void> {
    if (signal?.aborted) return Promise.reject(abandoned());
    if (this.running < this.concurrency) {
      this.running += 1;
      this.lastServed.set(owner, ++this.served);
      return Promise.resolve();
    }
    return new Promise<void>((resolve, reject) => {
      const start = (): void => {
        signal?.removeEventListener('abort', leave);
        resolve();
      };
      const leave = (): void => {
        const queue = this.queues.get(owner);
        const at = queue ? queue.indexOf(start) : -1;
        if (!queue || at < 0) return;
        queue.splice(at, 1);
        if (queue.length === 0) this.queues.delete(owner);
        this.waiting -= 1;
        reject(abandoned());
      };
      signal?.addEventListener('abort', leave, { once: true });
      const queue = this.queues.get(owner);
      if (queue) queue.push(start);
      else this.queues.set(owner, [start]);
      this.waiting += 1;
    });
  }

  /** Gives a freed thread to the waiting owner served longest ago (at most maxWaiting owners to look at). */
  private startNext(): void {
    let owner: string | undefined;
    for (const candidate of this.queues.keys()) {
      if (owner === undefined || (this.lastServed.get(candidate) ?? 0) < (this.lastServed.get(owner) ?? 0)) owner = candidate;
    }
    if (owner === undefined) return;
    const queue = this.queues.get(owner) ?? [];
    const start = queue.shift();
    if (queue.length === 0) this.queues.delete(owner);
    if (!start) return;
    this.waiting -= 1;
    this.running += 1;
    this.lastServed.set(owner, ++this.served);
    start();
  }
}
