import { useId, useState } from 'react';
import { parseCsv, type Table } from '../lib/csv';

export interface CsvData extends Table {
  /** The CSV text as given (uploaded as is to the service). */
  text: string;
  name: string;
}

/** A CSV from a file or pasted text, parsed in the page to offer its columns. */
export function CsvSource({ label, onChange, allowPaste = false, sample }: { label: string; onChange: (data: CsvData | null, problem?: string) => void; allowPaste?: boolean; sample?: string }) {
  const id = useId();
  const [problem, setProblem] = useState<string | null>(null);
  const [pasted, setPasted] = useState('');
  const accept = (text: string, name: string) => {
    if (text.trim() === '') {
      setProblem(null);
      onChange(null);
      return;
    }
    try {
      const table = parseCsv(text);
      if (table.columns.length === 0 || table.rows.length === 0) throw new Error('The CSV needs a header row and at least one data row.');
      setProblem(null);
      onChange({ ...table, text, name });
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      setProblem(message);
      onChange(null, message);
    }
  };
  return (
    <fieldset>
      <legend>{label}</legend>
      <label htmlFor={`${id}-file`}>CSV file</label>
      <input
        id={`${id}-file`}
        type="file"
        accept=".csv,text/csv,text/plain"
        onChange={(e) => {
          const file = e.target.files?.[0];
          if (file) file.text().then((text) => accept(text, file.name), (err: unknown) => setProblem(String(err)));
        }}
      />
      {allowPaste && (
        <>
          <label htmlFor={`${id}-text`}>or paste CSV text (header row first)</label>
          <textarea
            id={`${id}-text`}
            rows={6}
            value={pasted}
            spellCheck={false}
            onChange={(e) => {
              setPasted(e.target.value);
              accept(e.target.value, 'pasted.csv');
            }}
          />
          {sample && (
            <button
              type="button"
              className="link"
              onClick={() => {
                setPasted(sample);
                accept(sample, 'sample.csv');
              }}
            >
              Use a sample series
            </button>
          )}
        </>
      )}
      {problem && (
        <p role="alert" className="field-error">
          {problem}
        </p>
      )}
    </fieldset>
  );
}
