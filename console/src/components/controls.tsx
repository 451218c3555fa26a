import { useRef, useState, type ReactNode } from 'react';

/** A button that asks first, in a modal dialog (focus is trapped and returned by the browser's <dialog>). */
export function ConfirmButton({
  label,
  title,
  message,
  confirmLabel,
  onConfirm,
  danger = false,
  disabled = false,
  confirmDisabled = false,
}: {
  label: string;
  title: string;
  message: ReactNode;
  confirmLabel: string;
  onConfirm: () => void;
  danger?: boolean;
  disabled?: boolean;
  /** The dialog's fields do not make a valid request yet (e.g. a number left empty). */
  confirmDisabled?: boolean;
}) {
  const dialog = useRef<HTMLDialogElement>(null);
  const titleId = useRef(`confirm-${Math.random().toString(36).slice(2)}`).current;
  return (
    <>
      <button type="button" className={danger ? 'danger' : 'secondary'} disabled={disabled} onClick={() => dialog.current?.showModal()}>
        {label}
      </button>
      <dialog ref={dialog} aria-labelledby={titleId}>
        <h2 id={titleId}>{title}</h2>
        <div>{message}</div>
        <div className="actions">
          <button type="button" className="secondary" onClick={() => dialog.current?.close()}>
            Cancel
          </button>
          <button
            type="button"
            className={danger ? 'danger' : ''}
            disabled={confirmDisabled}
            onClick={() => {
              dialog.current?.close();
              onConfirm();
            }}
          >
            {confirmLabel}
          </button>
        </div>
      </dialog>
    </>
  );
}

/**
 * A whole number typed in a dialog, kept as its text: an emptied field is not a number (React's
 * `Number('')` is 0, which for a grace period or an overlap is the most destructive value).
 */
export function wholeNumber(text: string, max: number): number | null {
  if (!/^\s*\d+\s*$/.test(text)) return null;
  const n = Number(text);
  return n <= max ? n : null;
}

/** Copies `text`; says so in a live region (the clipboard needs a secure context: https or loopback). */
export function CopyButton({ text, label = 'Copy' }: { text: string; label?: string }) {
  const [state, setState] = useState<'idle' | 'copied' | 'failed'>('idle');
  return (
    <>
      <button
        type="button"
        className="secondary"
        onClick={() => {
          navigator.clipboard.writeText(text).then(
            () => setState('copied'),
            () => setState('failed'),
          );
        }}
      >
        {label}
      </button>
      <span role="status" className="small">
        {state === 'copied' ? 'Copied to the clipboard.' : state === 'failed' ? 'Copy failed: select the text and copy it by hand.' : ''}
      </span>
    </>
  );
}

/** The secret of a new key or webhook: shown once, with a copy button. */
export function SecretOnce({ secret, what }: { secret: string; what: string }) {
  return (
    <div className="notice notice-success secret" role="status">
      <p>
        <strong>Copy the {what} now:</strong> it is shown once and never again.
      </p>
      <p>
        <code data-testid="secret">{secret}</code>
      </p>
      <CopyButton text={secret} label={`Copy the ${what}`} />
    </div>
  );
}
