import { useCallback, useState } from 'react';
import { asApiError, type ApiError } from '../api/errors';

export interface Action {
  /** The label of the action under way (shown as progress), or null. */
  busy: string | null;
  /** The last action's error (its envelope's sentence is what the page shows), or null. */
  error: ApiError | null;
  setError: (error: ApiError | null) => void;
  /**
   * Runs one action of the page: `busy` names it meanwhile, a failure lands in `error`, `done` gets
   * its value when it succeeded and `always` runs after it either way (e.g. to reload a list).
   */
  run: <T>(label: string, task: () => Promise<T>, handlers?: { done?: (value: T) => void; failed?: (error: unknown) => void; always?: () => void }) => Promise<void>;
}

/** The busy/error state every page with buttons keeps, in one place. */
export function useAction(): Action {
  const [busy, setBusy] = useState<string | null>(null);
  const [error, setError] = useState<ApiError | null>(null);
  const run = useCallback(async <T,>(label: string, task: () => Promise<T>, handlers: { done?: (value: T) => void; failed?: (error: unknown) => void; always?: () => void } = {}) => {
    setBusy(label);
    setError(null);
    try {
      const value = await task();
      handlers.done?.(value);
    } catch (err) {
      handlers.failed?.(err);
      setError(asApiError(err));
    } finally {
      setBusy(null);
      handlers.always?.();
    }
  }, []);
  return { busy, error, setError, run };
}
