/** Small measures shared by the tabular benchmark scripts. */

/** CPU seconds (user + system) this process has used so far: differences time work under any load. */
export function cpuSeconds(): number {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1e6;
}

/** The mean of `values` (0 for none). */
export function mean(values: number[]): number {
  return values.reduce((s, v) => s + v, 0) / Math.max(1, values.length);
}
