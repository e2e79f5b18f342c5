/** Durations as a person reads them, shared by the CLI and the dashboard. */

/** A duration a person reads at a glance, from µs: 850ms, 12.3s, 4m05s, 2h10m, 3d4h. */
export function duration(us: number): string {
  const ms = Math.round(us / 1000);
  if (ms < 1000) return `${ms}ms`;
  const s = ms / 1000;
  if (s < 60) return `${s.toFixed(1)}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m${String(Math.floor(s % 60)).padStart(2, '0')}s`;
  const h = Math.floor(m / 60);
  if (h < 48) return `${h}h${String(m % 60).padStart(2, '0')}m`;
  return `${Math.floor(h / 24)}d${h % 24}h`;
}
