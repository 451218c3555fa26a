/**
 * CPU time of the processes a scenario keeps busy (the service or the floor with their child processes,
 * and the PostgreSQL backends of the scratch database), read from /proc. Latency and throughput move
 * with whatever else the 2-core machine runs; the CPU a call costs moves far less, so it is what
 * compares two versions of the path measured at different moments (Linux only; elsewhere: null).
 */
import fs from 'node:fs';
import type { MikroORM } from '@mikro-orm/postgresql';

/** Kernel clock ticks per second of /proc/<pid>/stat's times (USER_HZ, 100 on Linux). */
const TICKS_PER_SECOND = 100;

interface ProcStat {
  ppid: number;
  /** utime + stime, in ticks. */
  ticks: number;
}

function readStat(pid: number): ProcStat | null {
  try {
    const text = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name is in parentheses and may hold spaces: fields are counted after its last ')'.
    const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
    return { ppid: Number(fields[1]), ticks: Number(fields[11]) + Number(fields[12]) };
  } catch {
    return null;
  }
}

function allPids(): number[] {
  return fs
    .readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .map(Number);
}

/** `root` and every process below it. */
function processTree(root: number): number[] {
  const parents = new Map<number, number>();
  for (const pid of allPids()) {
    const stat = readStat(pid);
    if (stat) parents.set(pid, stat.ppid);
  }
  const tree = new Set([root]);
  let grew = true;
  while (grew) {
    grew = false;
    for (const [pid, ppid] of parents) {
      if (!tree.has(pid) && tree.has(ppid)) {
        tree.add(pid);
        grew = true;
      }
    }
  }
  return [...tree];
}

const ticksOf = (pids: number[]): number => pids.reduce((sum, pid) => sum + (readStat(pid)?.ticks ?? 0), 0);

export interface CpuWatch {
  /** CPU seconds spent since the watch started: by the process tree, and by the database's backends. */
  stop(): Promise<{ process: number; database: number }>;
}

/** The database's backends on this machine (none when PostgreSQL runs elsewhere: their /proc is not ours). */
async function backendPids(orm: MikroORM): Promise<number[]> {
  const rows = await orm.em.getConnection().execute<Array<{ pid: number }>>(`select pid from pg_stat_activity where datname = current_database()`);
  return rows.map((r) => r.pid).filter((pid) => readStat(pid) !== null);
}

/** Starts counting the CPU of `root`'s process tree and of the database's backends; null off Linux. */
export async function watchCpu(root: number, orm: MikroORM): Promise<CpuWatch | null> {
  if (!fs.existsSync('/proc/self/stat')) return null;
  const tree = processTree(root);
  const treeStart = new Map(tree.map((pid) => [pid, readStat(pid)?.ticks ?? 0]));
  const backends = await backendPids(orm);
  const backendStart = new Map(backends.map((pid) => [pid, readStat(pid)?.ticks ?? 0]));
  return {
    async stop() {
      // Backends that connected during the run count whole; those that left are lost (rare: pooled).
      const spentSince = (start: Map<number, number>, pids: number[]) => pids.reduce((sum, pid) => sum + ticksOf([pid]) - (start.get(pid) ?? 0), 0);
      const process = spentSince(treeStart, processTree(root));
      const database = spentSince(backendStart, await backendPids(orm));
      return { process: process / TICKS_PER_SECOND, database: database / TICKS_PER_SECOND };
    },
  };
}
