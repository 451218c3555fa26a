import type { ReactNode } from 'react';

/**
 * A read-only table in a keyboard-scrollable region (narrow screens scroll the table, not the page),
 * with its caption and column headers: the one shape of every listing of the console.
 */
export function DataTable({ label, caption, columns, rows, testId }: { label: string; caption: ReactNode; columns: string[]; rows: ReactNode[][]; testId?: string }) {
  return (
    <div className="table-scroll" tabIndex={0} role="region" aria-label={label}>
      <table data-testid={testId}>
        <caption>{caption}</caption>
        <thead>
          <tr>
            {columns.map((c) => (
              <th key={c} scope="col">
                {c}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {rows.map((row, i) => (
            <tr key={i}>
              {row.map((cell, j) => (
                <td key={j}>{cell}</td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
