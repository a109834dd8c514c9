// Namespace identities of a process, as the kernel names them ("user:[4026531837]").
import { readlinkSync } from 'node:fs';
import { NS_NAMES, type NsName } from './types.js';
import { integer } from './validate.js';

export function nsIds(pid: number | 'self'): Record<NsName, string> {
  const who = pid === 'self' ? 'self' : String(integer('pid', pid, 1, 0x3fffffff));
  const out = {} as Record<NsName, string>;
  for (const name of NS_NAMES) out[name] = readlinkSync(`/proc/${who}/ns/${name}`);
  return out;
}
