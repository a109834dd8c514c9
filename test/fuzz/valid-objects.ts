// Valid Roots, Policies, Worlds, Checks and Collapses for the fuzz campaign, drawn from a seeded random
// source. Valid means the API server should accept them (the CRD schema and its CEL rules); what the
// controller and node-agent then make of them (a missing Root, a conflicting Policy, a World that fails)
// is the point. References are drawn from pools the campaign fills, so objects refer to each other.
import { ISOLATION_CONTROLS, ISOLATION_LEVELS } from '../../core/isolation/vocabulary.js';
import type { FuzzKind } from './crd-schema.js';
import type { SeededRandom } from './seeded-random.js';

export interface NamePools {
  /** Root names Worlds and Policies may name (existing or not, on the agent's node or not). */
  roots: string[];
  /** Roots on the agent's node that plain fuzzed Worlds and Policies may name (they run for real). */
  liveRoots: string[];
  /** World names Checks and Collapses may name. */
  worlds: string[];
  /** Nodes without an agent, for fuzzed Roots. */
  absentNodes: string[];
}

export const NAMESPACE = 'fuzz';
export type Obj = { apiVersion: string; kind: FuzzKind; metadata: { name: string; namespace?: string; labels?: Record<string, string> }; spec: Record<string, any> };

const COMMANDS: string[][] = [['true'], ['false'], ['/bin/sh', '-c', 'exit 3'], ['no-such-program'], ['/bin/echo', 'hello'], ['/bin/sh', '-c', 'echo out > f.txt'], ['/bin/ls', '-la', '/']];
const LABEL = 'abcdefghijklmnopqrstuvwxyz0123456789';

export function dnsLabel(r: SeededRandom, max = 20): string {
  const n = r.int(1, max);
  let s = LABEL[r.int(0, 25)]!;
  for (let i = 1; i < n; i++) s += r.chance(0.1) && i < n - 1 ? '-' : LABEL[r.int(0, LABEL.length - 1)]!;
  return s;
}

function absPath(r: SeededRandom): string {
  return `/${Array.from({ length: r.int(1, 4) }, () => dnsLabel(r, 8)).join('/')}`;
}

function quantity(r: SeededRandom, kind: 'cpu' | 'memory' | 'bytes'): string | number {
  if (kind === 'cpu') return r.pick(['100m', '500m', '1', '2', 1, '250m']);
  if (kind === 'memory') return r.pick(['64Mi', '128Mi', '1Gi', '256Mi', 268435456]);
  return r.pick(['1Mi', '10Mi', '100Mi', 1048576]);
}

function network(r: SeededRandom): Record<string, unknown> {
  const policy = r.pick(['None', 'Allowlist', 'Shared']);
  return policy === 'Allowlist' ? { policy, allow: r.subset(['example.com:443', '10.0.0.1:80', 'registry.local:5000', '[::1]:8080'], 1, 3) } : { policy };
}

function maybe<T>(r: SeededRandom, p: number, f: () => T): T | undefined {
  return r.chance(p) ? f() : undefined;
}

function compact(o: Record<string, unknown>): Record<string, any> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined));
}

function rootRefs(r: SeededRandom, pools: NamePools, max: number): string[] {
  if (r.chance(0.04)) return [r.pick(pools.liveRoots)];
  return [...new Set(Array.from({ length: r.int(1, max) }, () => r.pick(pools.roots)))];
}

export function validSpec(kind: FuzzKind, r: SeededRandom, pools: NamePools): Record<string, any> {
  switch (kind) {
    case 'Root':
      return { nodeName: r.pick(pools.absentNodes), path: absPath(r) };
    case 'Policy':
      return compact({
        roots: rootRefs(r, pools, 3),
        checks: maybe(r, 0.6, () => {
          const names = [...new Set(Array.from({ length: r.int(1, 3) }, () => dnsLabel(r, 10)))];
          return names.map((name) => {
            const priv = r.chance(0.2);
            return compact({
              name,
              // A private check's examiner is python3 running a staged script (PRIVATE_EXAMINER_INVALID otherwise).
              command: priv ? ['/usr/bin/python3', '-I', `/run/worldline-verifiers/${dnsLabel(r, 8)}/checks/examine.py`] : r.pick(COMMANDS),
              verifiers: priv || r.chance(0.4) ? r.subset(['tests/**', 'Makefile', 'check.sh', 'spec/*.txt'], 1, 3) : undefined,
              timeout: maybe(r, 0.5, () => r.pick(['10s', '1m', '5m30s'])),
              profile: priv ? 'private-evaluator-v1' : maybe(r, 0.3, () => 'legacy'),
              reportFormat: priv ? r.pick(['junit', 'gnatprove', 'worldline-benchmark-v1']) : undefined,
              env: maybe(r, 0.2, () => r.subset(['HOME', 'LANG', 'CI'], 1, 2)),
            });
          });
        }),
        isolation: maybe(r, 0.7, () => compact({
          agent: maybe(r, 0.8, () => compact({ minimumLevel: r.pick(ISOLATION_LEVELS), controls: maybe(r, 0.5, () => r.subset(ISOLATION_CONTROLS, 1, 4)), allowHostYolo: maybe(r, 0.2, () => r.chance(0.5)) })),
          check: maybe(r, 0.6, () => compact({ minimumLevel: r.pick(ISOLATION_LEVELS), controls: maybe(r, 0.5, () => r.subset(ISOLATION_CONTROLS, 1, 4)) })),
        })),
        network: maybe(r, 0.3, () => network(r)),
      });
    case 'World':
      return compact({
        roots: rootRefs(r, pools, 3),
        agent: compact({
          command: r.pick(COMMANDS),
          env: maybe(r, 0.3, () => [...new Set(Array.from({ length: r.int(1, 3) }, () => `V_${dnsLabel(r, 6).replace(/-/g, '_')}`))].map((name) => ({ name, value: dnsLabel(r, 12) }))),
          workingDir: maybe(r, 0.2, () => absPath(r)),
          runAsUser: maybe(r, 0.3, () => r.int(0, 65535)),
          credentials: maybe(r, 0.1, () => ({ secretName: dnsLabel(r, 10), key: 'token', path: '/run/fuzz/token' })),
        }),
        network: maybe(r, 0.3, () => network(r)),
        resources: maybe(r, 0.5, () => compact({
          cpu: maybe(r, 0.5, () => quantity(r, 'cpu')),
          memory: maybe(r, 0.5, () => quantity(r, 'memory')),
          pids: maybe(r, 0.5, () => r.int(1, 4096)),
          wallTime: r.pick(['5s', '20s', '1m']),
          outputBytes: maybe(r, 0.3, () => quantity(r, 'bytes')),
        })),
        isolation: maybe(r, 0.4, () => compact({ minimumLevel: maybe(r, 0.7, () => r.pick(ISOLATION_LEVELS)), controls: maybe(r, 0.5, () => r.subset(ISOLATION_CONTROLS, 1, 4)), acknowledgeHostYolo: maybe(r, 0.2, () => r.chance(0.5)) })),
      });
    case 'Check':
      return compact({ worldRef: r.pick(pools.worlds), name: r.pick(['unit', 'lint', 'build', dnsLabel(r, 8)]), revalidate: maybe(r, 0.3, () => r.chance(0.5)) });
    case 'Collapse':
      return compact({ worldRef: r.pick(pools.worlds), mode: maybe(r, 0.7, () => r.pick(['Candidate', 'CheckpointReturn'])) });
  }
}

export function objectOf(kind: FuzzKind, name: string, spec: Record<string, any>, namespaced: boolean): Obj {
  return { apiVersion: 'worldline.dev/v1alpha1', kind, metadata: namespaced ? { name, namespace: NAMESPACE } : { name }, spec };
}
