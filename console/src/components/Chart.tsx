import { useEffect, useRef } from 'react';
import { DataTable as Table } from './DataTable';
import {
  BarController,
  BarElement,
  CategoryScale,
  Chart,
  Filler,
  Legend,
  LinearScale,
  LineController,
  LineElement,
  PointElement,
  Tooltip,
  type ChartConfiguration,
} from 'chart.js';

Chart.register(BarController, BarElement, LineController, LineElement, PointElement, CategoryScale, LinearScale, Filler, Legend, Tooltip);
// Text at AA contrast on white (chart.js's default grey is too light).
Chart.defaults.color = '#374151';
Chart.defaults.font.family = 'system-ui, sans-serif';

export interface DataTable {
  caption: string;
  columns: string[];
  rows: Array<Array<string | number | null>>;
}

/**
 * A chart.js canvas plus the same values as a table. The canvas is an image to assistive technology
 * (role img, with a label); the table, in a disclosure, is what a screen reader or a test reads.
 */
export function ChartView({ config, label, table, testId }: { config: ChartConfiguration; label: string; table: DataTable; testId?: string }) {
  const canvas = useRef<HTMLCanvasElement>(null);
  useEffect(() => {
    if (!canvas.current) return;
    const chart = new Chart(canvas.current, { ...config, options: { responsive: true, maintainAspectRatio: false, animation: false, ...config.options } });
    return () => chart.destroy();
  }, [config]);
  return (
    <figure className="chart" data-testid={testId}>
      <div className="chart-canvas">
        <canvas ref={canvas} role="img" aria-label={label} />
      </div>
      <details>
        <summary>Show the values as a table</summary>
        <Table label={table.caption} caption={table.caption} columns={table.columns} rows={table.rows.map((row) => row.map((cell) => cell ?? ''))} />
      </details>
    </figure>
  );
}

/** Colours with at least 3:1 contrast against white (WCAG 1.4.11, non-text contrast). */
export const PALETTE = ['#1d4ed8', '#b45309', '#047857', '#7c3aed', '#be123c', '#0e7490', '#4d7c0f', '#9d174d'];
