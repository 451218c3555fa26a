import { useCallback, useEffect, useState } from 'react';
import { asApiError, type ApiError } from '../api/errors';

export interface Resource<T> {
  data: T | undefined;
  error: ApiError | undefined;
  loading: boolean;
  reload: () => void;
}

/** Loads `load()` when `deps` change (the previous load is aborted) and on `reload()`. */
export function useResource<T>(load: (signal: AbortSignal) => Promise<T>, deps: readonly unknown[]): Resource<T> {
  const [state, setState] = useState<{ data?: T; error?: ApiError; loading: boolean }>({ loading: true });
  const [generation, setGeneration] = useState(0);
  // The caller names the dependencies of `load`, as with useCallback itself.
  const stableLoad = useCallback(load, deps);
  useEffect(() => {
    const controller = new AbortController();
    setState((s) => ({ ...s, loading: true }));
    stableLoad(controller.signal).then(
      (data) => {
        if (!controller.signal.aborted) setState({ data, loading: false });
      },
      (err: unknown) => {
        if (!controller.signal.aborted) setState((s) => ({ data: s.data, error: asApiError(err), loading: false }));
      },
    );
    return () => controller.abort();
  }, [stableLoad, generation]);
  return { ...state, reload: useCallback(() => setGeneration((g) => g + 1), []) } as Resource<T>;
}
