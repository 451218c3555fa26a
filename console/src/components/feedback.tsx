import type { ReactNode } from 'react';
import { useEffect, useState } from 'react';
import type { ApiError } from '../api/errors';

/** The envelope's sentence, announced at once. */
export function ErrorNotice({ error }: { error: ApiError | null | undefined }) {
  if (!error) return null;
  return (
    <div className="notice notice-error" role="alert">
      <p>{error.detail}</p>
      <p className="muted small">
        {error.code}
        {error.requestId ? ` · request ${error.requestId}` : ''}
      </p>
    </div>
  );
}

/** An indeterminate progress bar with the elapsed time, for calls that take seconds (training, scoring, forecasting). */
export function Busy({ label }: { label: string }) {
  const [seconds, setSeconds] = useState(0);
  useEffect(() => {
    const started = Date.now();
    const timer = setInterval(() => setSeconds(Math.floor((Date.now() - started) / 1000)), 1000);
    return () => clearInterval(timer);
  }, []);
  return (
    <div className="busy" role="status" aria-live="polite">
      <progress aria-label={label} />
      <span>
        {label}… {seconds > 0 ? `${seconds} s` : ''}
      </span>
    </div>
  );
}

export function Loading({ what }: { what: string }) {
  return (
    <p role="status" className="muted">
      Loading {what}…
    </p>
  );
}

export function Success({ children }: { children: ReactNode }) {
  return (
    <div className="notice notice-success" role="status">
      {children}
    </div>
  );
}
