import { readFileSync } from 'node:fs'

/** The niceness of thread `tid` of process `pid` (Linux: the 19th field of its `stat`). */
export function threadNiceness(pid: number | 'self', tid: string): number {
  const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8')
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16])
}
