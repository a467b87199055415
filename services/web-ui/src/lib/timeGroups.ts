// Sidebar grouping by `updated_at` (epoch seconds), as Open WebUI: Today, Yesterday, Previous 7
// days, Previous 30 days, then by month ("March", or "March 2025" for another year).

export interface TimeGroup<T> {
  label: string;
  items: T[];
}

const DAY = 86_400_000;

function startOfDay(d: Date): number {
  return new Date(d.getFullYear(), d.getMonth(), d.getDate()).getTime();
}

export function timeGroupLabel(epochSeconds: number, now: Date = new Date()): string {
  const t = epochSeconds * 1000;
  const today = startOfDay(now);
  if (t >= today) return 'Today';
  if (t >= today - DAY) return 'Yesterday';
  if (t >= today - 7 * DAY) return 'Previous 7 days';
  if (t >= today - 30 * DAY) return 'Previous 30 days';
  const d = new Date(t);
  const month = d.toLocaleString('en-US', { month: 'long' });
  return d.getFullYear() === now.getFullYear() ? month : `${month} ${d.getFullYear()}`;
}

/** Groups in the order the (newest-first) items arrive. */
export function groupByTime<T extends { updated_at: number }>(items: readonly T[], now: Date = new Date()): TimeGroup<T>[] {
  const sorted = [...items].sort((a, b) => b.updated_at - a.updated_at);
  const groups: TimeGroup<T>[] = [];
  const byLabel = new Map<string, TimeGroup<T>>();
  for (const item of sorted) {
    const label = timeGroupLabel(item.updated_at, now);
    let g = byLabel.get(label);
    if (!g) {
      g = { label, items: [] };
      byLabel.set(label, g);
      groups.push(g);
    }
    g.items.push(item);
  }
  return groups;
}
